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

TEST(ModelPresets, EveryPublishedDecoderIsWithinOnePercentOfItsPublishedCount) {
  ASSERT_EQ(DecoderPresets().size(), 16u);
  for (const DecoderSpec& spec : DecoderPresets()) {
    // The CPU engine's own models and moe-small are pipette's design: nothing published.
    const bool own = spec.name.starts_with("tiny") || spec.name == "moe-small";
    EXPECT_EQ(spec.published_params == 0, own) << spec.name;
    if (own) continue;
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
  // 126 x (2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248 + 2 x 16384) + 2 x 128256 x 16384
  // + 16384 (HF meta-llama/Llama-3.1-405B: 405,853,388,800).
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("llama3-405b")), 405'853'388'800);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("llama3.2-1b")), 1'235'814'400);
}

// tiny, counted by hand (h = 64, vocab 64, 32 positions, 4 blocks, ffn 256, biases):
//   token embedding 64*64 = 4096, positions 32*64 = 2048,
//   per block: 2 LayerNorms 2*2*64 = 256, QKV 64*192 + 192 = 12480, projection 64*64 + 64 = 4160,
//              MLP 64*256 + 256 + 256*64 + 64 = 33088; 49984 per block, 199936 for four,
//   final LayerNorm 128, LM head 64*64 = 4096 (no bias), none when tied to the embedding.
TEST(ModelPresets, TinyModelsHaveTheirHandCountedParameters) {
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("tiny")), 4096 + 2048 + 199936 + 128 + 4096);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("tiny-tied")), 4096 + 2048 + 199936 + 128);
  const DecoderSpec& tiny = *FindDecoderPreset("tiny");
  const DecoderSpec& tied = *FindDecoderPreset("tiny-tied");
  EXPECT_FALSE(tiny.tied_embeddings);
  EXPECT_TRUE(tied.tied_embeddings);
  EXPECT_EQ(tiny.max_positions, 32);
  EXPECT_EQ(tied.max_positions, 32);
}

// tiny-llama, counted by hand (h = 64, 4 heads of 16, 2 kv heads, vocab 64, 4 blocks, SwiGLU 128,
// no biases, no position table):
//   token embedding 64*64 = 4096,
//   per block: 2 RMSNorms 2*64 = 128, QKV (4 + 2*2)*16 * 64 = 8192, projection 64*64 = 4096,
//              MLP 3 * 64*128 = 24576; 36992 per block, 147968 for four,
//   final RMSNorm 64, LM head 64*64 = 4096, none when tied.
TEST(ModelPresets, TinyLlamaModelsHaveTheirHandCountedParameters) {
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("tiny-llama")), 4096 + 147968 + 64 + 4096);
  EXPECT_EQ(ParamsOf(*FindDecoderPreset("tiny-llama-tied")), 4096 + 147968 + 64);
  const DecoderSpec& llama = *FindDecoderPreset("tiny-llama");
  EXPECT_EQ(llama.kv_heads, 2);
  EXPECT_EQ(llama.max_positions, 32);  // the context length: no table with RoPE
  EXPECT_FALSE(llama.tied_embeddings);
  EXPECT_TRUE(FindDecoderPreset("tiny-llama-tied")->tied_embeddings);
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
                                   "llama3-8b", "llama3-70b", "llama3-405b", "llama3.2-1b",
                                   "deepseek-v3", "mixtral-8x7b", "moe-small", "tiny", "tiny-tied",
                                   "tiny-llama", "tiny-llama-tied", "vlm-small"}));
  EXPECT_EQ(FindDecoderPreset("gpt4"), nullptr);
  EXPECT_EQ(FindTwoTowerPreset("llama3-8b"), nullptr);
}

TEST(ModelPresets, ArchitecturesFollowTheirFamilies) {
  for (const DecoderSpec& spec : DecoderPresets()) {
    // GPT-2/3 and the CPU engine's tiny and tiny-tied are GPT-style; the rest Llama-style.
    const bool gpt = spec.name.starts_with("gpt");
    const bool gpt_style = gpt || spec.name == "tiny" || spec.name == "tiny-tied";
    EXPECT_EQ(spec.learned_positions, gpt_style) << spec.name;
    EXPECT_EQ(spec.bias, gpt_style) << spec.name;
    EXPECT_EQ(spec.gated_mlp, !gpt_style) << spec.name;
    // deepseek-v3 approximates MLA by multi-head attention (model_presets.cc).
    EXPECT_EQ(spec.kv_heads == spec.heads, gpt_style || spec.name == "llama2-7b" ||
                                               spec.name == "deepseek-v3" ||
                                               spec.name == "moe-small")
        << spec.name;
    if (gpt_style) {
      EXPECT_EQ(spec.ffn_hidden, 4 * spec.hidden) << spec.name;
    }
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
