#include "pipette/model/model_presets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

namespace pipette {
namespace {

std::int64_t ParamsOf(const DecoderSpec& spec) {
  Result<ModelGraph> model = BuildDecoder(spec, Workload{1, 8, DType::kBF16});
  EXPECT_TRUE(model.ok()) << spec.name << ": " << model.status().message();
  return model.ok() ? model->TotalParams() : 0;
}

TEST(ModelPresets, EveryDecoderIsWithinOnePercentOfItsPublishedCount) {
  ASSERT_EQ(DecoderPresets().size(), 8u);
  for (const DecoderSpec& spec : DecoderPresets()) {
    ASSERT_GT(spec.published_params, 0) << spec.name;
    const std::int64_t params = ParamsOf(spec);
    const double deviation = static_cast<double>(params) / spec.published_params - 1;
    std::printf("%-12s computed %15lld  published %15lld  %+.3f%%\n", spec.name.c_str(),
                static_cast<long long>(params), static_cast<long long>(spec.published_params),
                100 * deviation);
    EXPECT_LT(std::abs(deviation), 0.01) << spec.name << ": " << params;
  }
}

// The exact counts of the released checkpoints (HF num_parameters / safetensors totals).
TEST(ModelPresets, DecodersMatchTheirCheckpointsExactly) {
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("gpt2-124m")), 124'439'808);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("gpt2-1.5b")), 1'557'611'200);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("llama2-7b")), 6'738'415'616);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("llama3-8b")), 8'030'261'248);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("llama3-70b")), 70'553'706'496);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("llama3.2-1b")), 1'235'814'400);
}

TEST(ModelPresets, NamesAreUniqueFindableAndSourced) {
  std::set<std::string> names;
  for (const DecoderSpec& spec : DecoderPresets()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(FindDecoderPreset(spec.name), &spec);
    EXPECT_FALSE(spec.source.empty()) << spec.name;
    EXPECT_TRUE(ValidateDecoderSpec(spec).ok()) << spec.name;
  }
  for (const TwoTowerSpec& spec : TwoTowerPresets()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(FindTwoTowerPreset(spec.name), &spec);
    EXPECT_FALSE(spec.source.empty()) << spec.name;
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"gpt2-124m", "gpt2-1.5b", "gpt3-1.3b", "gpt3-175b", "llama2-7b",
                                   "llama3-8b", "llama3-70b", "llama3.2-1b", "vlm-small"}));
  EXPECT_EQ(FindDecoderPreset("gpt4"), nullptr);
  EXPECT_EQ(FindTwoTowerPreset("llama3-8b"), nullptr);
}

TEST(ModelPresets, ArchitecturesFollowTheirFamilies) {
  for (const DecoderSpec& spec : DecoderPresets()) {
    const bool gpt = spec.name.starts_with("gpt");
    EXPECT_EQ(spec.learned_positions, gpt) << spec.name;
    EXPECT_EQ(spec.bias, gpt) << spec.name;
    EXPECT_EQ(spec.gated_mlp, !gpt) << spec.name;
    if (gpt) {
      EXPECT_EQ(spec.vocab, 50257) << spec.name;
      EXPECT_EQ(spec.ffn_hidden, 4 * spec.hidden) << spec.name;
      EXPECT_TRUE(spec.tied_embeddings) << spec.name;
    }
  }
  const DecoderSpec& llama = *FindDecoderPreset("llama3-70b");
  EXPECT_EQ(llama.layers, 80);
  EXPECT_EQ(llama.hidden, 8192);
  EXPECT_EQ(llama.heads, 64);
  EXPECT_EQ(llama.kv_heads, 8);
  EXPECT_EQ(llama.ffn_hidden, 28672);
  EXPECT_EQ(llama.vocab, 128256);
  EXPECT_FALSE(llama.tied_embeddings);
}

}  // namespace
}  // namespace pipette
