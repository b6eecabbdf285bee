#include "cpu/model_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cpu/train_plan.h"

namespace pipette::cpu {
namespace {

const std::string kDir = PIPETTE_MODEL_DATA_DIR;

TEST(ModelFile, GptChainBecomesADecoderSpec) {
  const auto spec = DecoderFromModelFile(kDir + "/gpt-small.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "gpt-small");
  EXPECT_EQ(spec->layers, 2);
  EXPECT_EQ(spec->hidden, 32);
  EXPECT_EQ(spec->heads, 2);
  EXPECT_EQ(spec->kv_heads, 2);
  EXPECT_EQ(spec->ffn_hidden, 128);
  EXPECT_EQ(spec->vocab, 64);
  EXPECT_EQ(spec->max_positions, 16);
  EXPECT_FALSE(spec->tied_embeddings);
  // And it plans: 8 graph layers over 2 pipeline stages.
  TrainOptions options;
  options.model = kDir + "/gpt-small.toml";
  options.p = 2;
  const auto plan = PlanTraining(options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->seq_len, 16);
  EXPECT_EQ(plan->piece_layers.size(), 2u);
}

TEST(ModelFile, RefusalsNameTheLayerAndWhy) {
  // The format's example mixes in Llama-style blocks and a custom branch.
  auto spec = DecoderFromModelFile(kDir + "/tiny.toml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("layer 'final_norm'"), std::string::npos)
      << spec.status().message();

  const std::string path = ::testing::TempDir() + "gqa.toml";
  std::ifstream in(kDir + "/gpt-small.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("heads = 2\nbias = true"), 9, "heads = 2\nkv_heads = 1");
  std::ofstream(path) << text;
  spec = DecoderFromModelFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("layer 'block0.attn' (attention) uses grouped-query"),
            std::string::npos)
      << spec.status().message();

  spec = DecoderFromModelFile(kDir + "/missing.toml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace pipette::cpu
