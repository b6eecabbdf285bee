#include "pipette/engine/decoder_layers.h"

#include <gtest/gtest.h>

#include "pipette/model/decoder.h"
#include "pipette/model/model_presets.h"

namespace pipette {
namespace {

// The engines' names are the model graph's: every preset, GPT and Llama, layer for layer.
TEST(DecoderLayers, LayerNamesAreTheGraphsLayerNames) {
  ASSERT_GE(DecoderPresets().size(), 4u);  // tiny, tiny-llama and their tied forms at least
  for (const DecoderSpec& spec : DecoderPresets()) {
    SCOPED_TRACE(spec.name);
    // The real engines run dense decoders only (an MoE block is block{i}.moe, which
    // decoder_from_graph refuses): LayerNames names the dense blocks.
    if (spec.experts > 0) continue;
    const auto graph = BuildDecoder(spec, Workload{1, 8, DType::kFP32});
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    const std::vector<std::string> names = LayerNames(spec);
    ASSERT_EQ(names.size(), graph->num_layers());
    ASSERT_EQ(names.size(), static_cast<std::size_t>(2 * spec.layers + 4));
    for (std::size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(names[i], graph->layer(static_cast<LayerId>(i)).name);
    }
  }
}

TEST(DecoderLayers, LayerNamesOfTheTinyPreset) {
  const DecoderSpec& tiny = *FindDecoderPreset("tiny");  // 4 blocks
  const std::vector<std::string> expected = {
      "embedding",  "block0.attn", "block0.mlp", "block1.attn", "block1.mlp", "block2.attn",
      "block2.mlp", "block3.attn", "block3.mlp", "final_norm",  "head",       "loss"};
  EXPECT_EQ(LayerNames(tiny), expected);
}

// Every block half's name parses back to its block and half; nothing else is a block half.
TEST(DecoderLayers, BlockIndexInvertsLayerNames) {
  DecoderSpec spec = *FindDecoderPreset("tiny-llama");
  spec.layers = 12;
  const std::vector<std::string> names = LayerNames(spec);
  for (std::size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    bool mlp = false;
    const int block = BlockIndex(names[i], mlp);
    if (i == 0 || i > static_cast<std::size_t>(2 * spec.layers)) {
      EXPECT_EQ(block, -1);
      continue;
    }
    EXPECT_EQ(block, static_cast<int>(i - 1) / 2);
    EXPECT_EQ(mlp, i % 2 == 0);
  }
}

TEST(DecoderLayers, BlockIndexRefusesOtherSpellings) {
  bool mlp = false;
  EXPECT_EQ(BlockIndex("block123.mlp", mlp), 123);
  EXPECT_TRUE(mlp);
  for (const char* name :
       {"block", "block.attn", "block1", "block1.", "block1.ffn", "block1.attn.x", "blockx.attn",
        "block-1.attn", "block+1.attn", "block01.attn", "block 1.attn", "block1x.mlp",
        "block99999999999.mlp", "Block1.attn", "xblock1.attn", ""}) {
    mlp = true;
    EXPECT_EQ(BlockIndex(name, mlp), -1) << name;
    EXPECT_TRUE(mlp) << name << ": left alone";
  }
  EXPECT_EQ(BlockIndex("block0.attn", mlp), 0);
  EXPECT_FALSE(mlp);
}

}  // namespace
}  // namespace pipette
