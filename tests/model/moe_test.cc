// Mixture-of-experts layers and presets: a small layer counted by hand, the presets against their
// published totals and hand counts of their config.json shapes, FLOPs as 6 x the activated
// matrices, the decoder's dense-then-MoE blocks, and the errors of bad MoE keys (decoder and
// model file).
#include <gtest/gtest.h>

#include <string>

#include "pipette/model/decoder.h"
#include "pipette/model/layer_formulas.h"
#include "pipette/model/model_presets.h"
#include "pipette/model/model_toml.h"

namespace pipette {
namespace {

ModelGraph Build(const std::string& name, Workload workload = {1, 8, DType::kBF16}) {
  Result<ModelGraph> model = BuildDecoder(*FindDecoderPreset(name), workload);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(*model) : ModelGraph{};
}

// hidden 8, experts of 4 (SwiGLU: 3 x 8 x 4 = 96 parameters each), 4 routed, top 2, 1 shared,
// capacity factor 1.5, 10 tokens of bf16: 30 routed rows, 10 shared rows.
TEST(MoeLayer, SmallShapeMatchesHandCounts) {
  const MoeShape shape{.hidden = 8,
                       .expert_ffn = 4,
                       .experts = 4,
                       .top_k = 2,
                       .shared_experts = 1,
                       .capacity_factor = 1.5,
                       .gated = true};
  const Layer layer = MoeLayer("moe", shape, TokenBatch{1, 10, 2});
  EXPECT_EQ(layer.type, "moe");
  EXPECT_EQ(layer.expert_params, 4 * 96);
  EXPECT_EQ(layer.activated_expert_params, 2 * 96);
  EXPECT_EQ(layer.params, 8 + 8 * 4 + 4 * 96 + 96);  // norm, router, routed, shared
  // router 2*10*4*8 = 640, routed 3 GEMMs x 2*30*4*8 = 5760, shared 3 x 2*10*4*8 = 1920.
  EXPECT_DOUBLE_EQ(layer.fwd_flops, 640 + 5760 + 1920);
  EXPECT_DOUBLE_EQ(layer.igrad_flops, layer.fwd_flops);
  EXPECT_DOUBLE_EQ(layer.wgrad_flops, layer.fwd_flops);
  EXPECT_EQ(layer.alltoall_bytes, 2 * 30 * 8);  // rows x hidden x 2 bytes
  // 2*10*16 (norm and router input) + 4*10*4 (fp32 router probs) + 2*30*(16 + 12) (routed rows:
  // input, output, 3 f-wide) + 2*10*12 (shared rows: 3 f-wide).
  EXPECT_EQ(layer.activation_bytes, 320 + 160 + 1680 + 240);
  EXPECT_EQ(layer.wgrad_input_bytes, 2 * 10 * 8 + 2 * 30 * 12 + 2 * 10 * 4);
  EXPECT_EQ(layer.output_bytes, 2 * 10 * 8);
  EXPECT_EQ(layer.shape.experts, 4);
  EXPECT_EQ(layer.shape.top_k, 2);
}

// Hand counts of the config.json shapes (docs/models.md): DeepSeek-V3 with MLA approximated by
// 128-head attention, Mixtral 8x7B exactly as released.
TEST(MoePresets, TotalAndActivatedParametersMatchHandCountsAndPublishedTotals) {
  const ModelGraph deepseek = Build("deepseek-v3");
  EXPECT_EQ(deepseek.TotalParams(), 672'149'632'000);
  EXPECT_EQ(deepseek.ActivatedParams(), 38'675'510'272);
  // Published: 671B total, 37B activated; the attention approximation adds 1.12B (+0.17 %) to
  // the total and as much to the activated count (+4.5 %).
  EXPECT_NEAR(deepseek.TotalParams() / 671e9, 1.0, 0.002);
  EXPECT_NEAR(deepseek.ActivatedParams() / 37e9, 1.0, 0.05);
  EXPECT_EQ(deepseek.attributes.experts, 256);

  const ModelGraph mixtral = Build("mixtral-8x7b");
  EXPECT_EQ(mixtral.TotalParams(), 46'702'792'704);  // the released checkpoint's count
  EXPECT_EQ(mixtral.ActivatedParams(), 12'879'925'248);
  EXPECT_NEAR(mixtral.TotalParams() / 46.7e9, 1.0, 0.001);
  EXPECT_NEAR(mixtral.ActivatedParams() / 12.9e9, 1.0, 0.002);

  const ModelGraph small = Build("moe-small");
  EXPECT_EQ(small.TotalParams(), 3'565'160'448);
  EXPECT_EQ(small.ActivatedParams(), 922'748'928);
  // A dense model activates everything.
  const ModelGraph llama = Build("llama2-7b");
  EXPECT_EQ(llama.ActivatedParams(), llama.TotalParams());
}

TEST(MoePresets, DeepSeekKeepsItsFirstThreeBlocksDense) {
  const ModelGraph model = Build("deepseek-v3");
  EXPECT_EQ(model.layer(2).name, "block0.mlp");
  EXPECT_EQ(model.layer(6).name, "block2.mlp");
  EXPECT_EQ(model.layer(8).name, "block3.moe");
  EXPECT_EQ(model.layer(8).type, "moe");
  EXPECT_EQ(model.layer(122).name, "block60.moe");
  int moe = 0;
  for (std::size_t v = 0; v < model.num_layers(); ++v) moe += model.layer(v).type == "moe";
  EXPECT_EQ(moe, 58);
}

// Per token a training step costs 6 x the matrices a token passes through (attention, router,
// top_k routed and shared experts, LM head) + 12 L h s, as for a dense decoder.
TEST(MoePresets, FlopsPerTokenAreSixActivatedMatricesPlusTwelveLhs) {
  const ModelGraph model = Build("mixtral-8x7b", Workload{2, 1024, DType::kBF16});
  double flops = 0;
  for (std::size_t v = 0; v < model.num_layers(); ++v) {
    const Layer& layer = model.layer(v);
    flops += layer.fwd_flops + layer.igrad_flops + layer.wgrad_flops;
  }
  const double h = 4096, kv = 1024, f = 14336, layers = 32, vocab = 32000, s = 1024;
  const double matrices = layers * (2 * h * h + 2 * h * kv + h * 8 + 2 * 3 * h * f) + vocab * h;
  EXPECT_NEAR(flops / (2 * 1024) / (6 * matrices + 12 * layers * h * s), 1.0, 1e-12);
}

TEST(MoeDecoder, BadMoeKeysNameTheKeyTheValueAndTheRule) {
  DecoderSpec spec = *FindDecoderPreset("moe-small");
  spec.top_k = 33;
  EXPECT_EQ(ValidateDecoderSpec(spec).message(),
            "model 'moe-small': moe_top_k = 33: must be at most moe_experts = 32 (a token picks "
            "top_k of the experts)");
  spec = *FindDecoderPreset("moe-small");
  spec.capacity_factor = 0.5;
  EXPECT_EQ(ValidateDecoderSpec(spec).message(),
            "model 'moe-small': moe_capacity_factor = 0.5: must be a number in [1, 64] (1: no "
            "padding)");
  spec = *FindDecoderPreset("moe-small");
  spec.first_dense_blocks = 17;
  EXPECT_EQ(ValidateDecoderSpec(spec).message(),
            "model 'moe-small': moe_first_dense_blocks = 17: more than the limit of 16");
  spec = *FindDecoderPreset("llama2-7b");
  spec.top_k = 2;
  EXPECT_EQ(ValidateDecoderSpec(spec).message(),
            "model 'llama2-7b': moe_top_k is set but moe_experts = 0: MoE keys need moe_experts "
            ">= 1");
}

constexpr char kMoeFile[] = R"(
[[layer]]
name = "embedding"
type = "embedding"
vocab = 100
hidden = 8
[[layer]]
name = "experts"
type = "moe"
hidden = 8
expert_ffn_hidden = 4
experts = 4
top_k = 2
shared_experts = 1
capacity_factor = 1.5
gated = true
)";

TEST(MoeToml, BuildsTheLayerItsFormulaGives) {
  Result<ModelGraph> model = ParseModelToml(kMoeFile, "m.toml", Workload{1, 10, DType::kBF16});
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Layer& layer = model->layer(1);
  EXPECT_EQ(layer.type, "moe");
  EXPECT_EQ(layer.params, 8 + 32 + 4 * 96 + 96);
  EXPECT_EQ(layer.alltoall_bytes, 480);
  EXPECT_EQ(model->attributes.experts, 4);
}

TEST(MoeToml, BadKeysNameFileLineKeyValueAndRule) {
  const Workload workload{1, 10, DType::kBF16};
  std::string text = kMoeFile;
  text.replace(text.find("top_k = 2"), 9, "top_k = 5");
  Result<ModelGraph> model = ParseModelToml(text, "m.toml", workload);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(),
            "m.toml:13: layer 'experts': top_k = 5: must be at most experts = 4 (a token picks "
            "top_k of the experts)");
  text = kMoeFile;
  text.replace(text.find("capacity_factor = 1.5"), 21, "capacity_factor = 0.5");
  model = ParseModelToml(text, "m.toml", workload);
  ASSERT_FALSE(model.ok());
  const std::string message = model.status().message();
  EXPECT_NE(message.find("m.toml:15"), std::string::npos) << message;
  EXPECT_NE(message.find("capacity_factor = 0.5"), std::string::npos) << message;
  EXPECT_NE(message.find(">= 1"), std::string::npos) << message;
  text = kMoeFile;
  text.replace(text.find("experts = 4"), 11, "experts = 0");
  model = ParseModelToml(text, "m.toml", workload);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("experts = 0"), std::string::npos)
      << model.status().message();
}

}  // namespace
}  // namespace pipette
