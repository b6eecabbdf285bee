#include "pipette/model/two_tower.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "pipette/model/layer_formulas.h"
#include "pipette/model/model_presets.h"

namespace pipette {
namespace {

const TwoTowerSpec& VlmSmall() {
  const TwoTowerSpec* spec = FindTwoTowerPreset("vlm-small");
  EXPECT_NE(spec, nullptr);
  return *spec;
}

ModelGraph MustBuild(const TwoTowerSpec& spec, const Workload& workload) {
  Result<ModelGraph> model = BuildTwoTower(spec, workload);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : ModelGraph{};
}

std::optional<LayerId> Find(const ModelGraph& model, std::string_view name) {
  for (std::size_t v = 0; v < model.num_layers(); ++v) {
    if (model.layer(v).name == name) return v;
  }
  return std::nullopt;
}

std::string ErrorOf(const TwoTowerSpec& spec, const Workload& workload = {}) {
  Result<ModelGraph> model = BuildTwoTower(spec, workload);
  EXPECT_FALSE(model.ok()) << spec.name << " accepted";
  return model.ok() ? "" : model.status().message();
}

TEST(TwoTower, VisionTowerComesFirstThenTheText) {
  const ModelGraph model = MustBuild(VlmSmall(), Workload{2, 1024, DType::kBF16});
  EXPECT_EQ(model.Regions(), (std::vector<std::string>{"vision", "text"}));
  // patch embed + 12 blocks × 2 + final norm + projector, then embedding + 16 × 2 + norm, head,
  // loss.
  ASSERT_EQ(model.num_layers(), (1 + 24 + 2) + (1 + 32 + 3));
  EXPECT_EQ(model.layer(0).name, "vision.patch_embed");
  EXPECT_EQ(model.layer(26).name, "vision.projector");
  EXPECT_EQ(model.layer(27).name, "text.embedding");
  EXPECT_EQ(model.layer(28).name, "text.block0.attn");
  EXPECT_EQ(model.layer(model.num_layers() - 1).name, "text.loss");
  for (std::size_t v = 0; v < model.num_layers(); ++v) {
    EXPECT_EQ(model.layer(v).region, v < 27 ? "vision" : "text") << model.layer(v).name;
  }
  Result<std::vector<LayerId>> order = model.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  for (std::size_t v = 0; v < order->size(); ++v) EXPECT_EQ((*order)[v], v);
  EXPECT_EQ(model.attributes.blocks, 12 + 16);
  EXPECT_EQ(model.attributes.hidden, 2048);
  EXPECT_EQ(model.attributes.heads, 32);
  EXPECT_EQ(model.attributes.kv_heads, 8);
  EXPECT_EQ(model.attributes.vocab, 128256);
}

TEST(TwoTower, FirstTextBlockConsumesTokensAndProjectedImage) {
  const std::int64_t b = 2, s = 1024, patches = 196, h = 2048, e = 2;
  const ModelGraph model = MustBuild(VlmSmall(), Workload{2, 1024, DType::kBF16});
  EXPECT_EQ(PatchesPerImage(VlmSmall()), patches);
  const LayerId projector = *Find(model, "vision.projector");
  const LayerId embedding = *Find(model, "text.embedding");
  const LayerId block0 = *Find(model, "text.block0.attn");
  EXPECT_EQ(boost::in_degree(block0, model.graph), 2u);
  auto [from_image, has_image] = boost::edge(projector, block0, model.graph);
  auto [from_text, has_text] = boost::edge(embedding, block0, model.graph);
  ASSERT_TRUE(has_image);
  ASSERT_TRUE(has_text);
  EXPECT_EQ(model.graph[from_image].bytes, b * patches * h * e);
  EXPECT_EQ(model.graph[from_text].bytes, b * s * h * e);
  EXPECT_EQ(boost::in_degree(embedding, model.graph), 0u);

  // Every text layer after the embedding runs seq_len + patches tokens per sequence.
  const Layer expected =
      AttentionLayer("block0.attn", AttentionShape{h, 32, 8, false}, TokenBatch{b, s + patches, e});
  EXPECT_DOUBLE_EQ(model.layer(block0).fwd_flops, expected.fwd_flops);
  EXPECT_EQ(model.layer(block0).activation_bytes, expected.activation_bytes);
  EXPECT_EQ(model.layer(*Find(model, "text.head")).output_bytes, b * (s + patches) * 128256 * e);
  // The vision tower runs one image of 196 patches per sample.
  const Layer& vision_attn = model.layer(*Find(model, "vision.block0.attn"));
  EXPECT_DOUBLE_EQ(
      vision_attn.fwd_flops,
      AttentionLayer("", AttentionShape{768, 12, 12, true}, TokenBatch{b, 196, e}).fwd_flops);
  EXPECT_EQ(model.layer(projector).output_bytes, b * patches * h * e);
}

TEST(TwoTower, ParamsAreVisionPlusProjectorPlusText) {
  const ModelGraph model = MustBuild(VlmSmall(), Workload{1, 128, DType::kBF16});
  std::int64_t vision = 0, projector = 0, text = 0;
  for (std::size_t v = 0; v < model.num_layers(); ++v) {
    const Layer& layer = model.layer(v);
    if (layer.type == "projector") {
      projector += layer.params;
    } else if (layer.region == "vision") {
      vision += layer.params;
    } else {
      text += layer.params;
    }
  }
  // ViT-B/16 without class token and classifier: 86M in Dosovitskiy et al., Table 1.
  EXPECT_NEAR(static_cast<double>(vision) / 86e6, 1.0, 0.01) << vision;
  EXPECT_EQ(projector, std::int64_t{768} * 2048 + 2048 + std::int64_t{2048} * 2048 + 2048);
  EXPECT_EQ(text, 1'235'814'400);  // llama3.2-1b
  EXPECT_EQ(model.TotalParams(), vision + projector + text);
}

TEST(TwoTower, PatchEmbeddingNeedsNoInputGradient) {
  const ModelGraph model = MustBuild(VlmSmall(), Workload{1, 128, DType::kBF16});
  const Layer& patch = model.layer(0);
  EXPECT_DOUBLE_EQ(patch.fwd_flops, 2.0 * 196 * (3 * 16 * 16) * 768);
  EXPECT_DOUBLE_EQ(patch.igrad_flops, 0);
  EXPECT_DOUBLE_EQ(patch.wgrad_flops, patch.fwd_flops);
  EXPECT_EQ(patch.params, std::int64_t{3 * 16 * 16} * 768 + 768 + 196 * 768);
}

TEST(TwoTower, RejectsInvalidSpecsNamingKeyValueAndRule) {
  TwoTowerSpec spec = VlmSmall();
  spec.name = "bad";
  TwoTowerSpec s = spec;
  s.patch_size = 15;
  EXPECT_EQ(ErrorOf(s),
            "model 'bad': image_size = 224, patch_size = 15: image_size must be divisible by "
            "patch_size (whole patches)");
  s = spec;
  s.vision_heads = 7;
  EXPECT_EQ(ErrorOf(s),
            "model 'bad': vision_hidden = 768, vision_heads = 7: vision_hidden must be divisible "
            "by vision_heads");
  s = spec;
  s.channels = 0;
  EXPECT_EQ(ErrorOf(s), "model 'bad': channels = 0: must be >= 1");
  s = spec;
  s.text.kv_heads = 3;
  EXPECT_EQ(ErrorOf(s),
            "model 'bad': text tower: model 'llama3.2-1b': heads = 32, kv_heads = 3: heads must be "
            "divisible by kv_heads (each K/V head serves heads/kv_heads query heads)");
  EXPECT_EQ(ErrorOf(spec, Workload{1, (1 << 20) - 100, DType::kBF16}),
            "model 'bad': seq_len + patches = 1048476 + 196 = 1048672 text-tower tokens per "
            "sequence, 1048672 per microbatch: more than the limit of 1048576 per sequence or "
            "16777216 per microbatch");
}

}  // namespace
}  // namespace pipette
