#include "pipette/engine/decoder_from_graph.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pipette/engine/train_plan.h"
#include "pipette/model/decoder.h"
#include "pipette/model/model_presets.h"
#include "pipette/model/model_toml.h"

namespace pipette {
namespace {

const std::string kDir = PIPETTE_MODEL_DATA_DIR;

// The decoder of the model file at `path`: the model layer reads it, the engine reads the graph.
Result<DecoderSpec> DecoderFromModelFile(const std::string& path) {
  PIPETTE_ASSIGN_OR_RETURN(const ModelGraph graph,
                           LoadModelToml(path, Workload{1, 1, DType::kFP32}));
  return DecoderFromGraph(graph, path);
}

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
  const std::string original((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  std::string text = original;
  text.replace(text.find("heads = 2\nbias = true"), 9, "heads = 2\nkv_heads = 1");
  std::ofstream(path) << text;
  spec = DecoderFromModelFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("layer 'block0.attn' (attention) uses grouped-query"),
            std::string::npos)
      << spec.status().message();

  // Shapes that would train silently wrong or crash: a head of another width, a vocab the
  // corpus cannot use.
  std::string other = original;
  other.replace(other.find("type = \"head\"\nhidden = 32"), 25, "type = \"head\"\nhidden = 48");
  std::ofstream(path) << other;
  spec = DecoderFromModelFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("layer 'head' (head) has another hidden"),
            std::string::npos)
      << spec.status().message();
  other = original;
  for (std::size_t at; (at = other.find("vocab = 64")) != std::string::npos;) {
    other.replace(at, 10, "vocab = 2");
  }
  std::ofstream(path) << other;
  spec = DecoderFromModelFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("vocab 2"), std::string::npos) << spec.status().message();

  spec = DecoderFromModelFile(kDir + "/missing.toml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("no such file"), std::string::npos);
}

TEST(ModelFile, APresetsGraphGivesBackItsSpec) {
  DecoderSpec tied = *FindDecoderPreset("tiny");
  tied.tied_embeddings = true;
  for (const DecoderSpec& spec : {*FindDecoderPreset("tiny"), tied}) {
    Result<ModelGraph> graph = BuildDecoder(spec, Workload{2, 8, DType::kFP32});
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    Result<DecoderSpec> read = DecoderFromGraph(*graph, "preset");
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(read->name, spec.name);
    EXPECT_EQ(read->source, "preset");
    EXPECT_EQ(read->layers, spec.layers);
    EXPECT_EQ(read->hidden, spec.hidden);
    EXPECT_EQ(read->heads, spec.heads);
    EXPECT_EQ(read->kv_heads, spec.kv_heads);
    EXPECT_EQ(read->ffn_hidden, spec.ffn_hidden);
    EXPECT_EQ(read->vocab, spec.vocab);
    EXPECT_EQ(read->max_positions, spec.max_positions);
    EXPECT_EQ(read->tied_embeddings, spec.tied_embeddings);
    EXPECT_TRUE(read->bias);
    EXPECT_TRUE(read->learned_positions);
    EXPECT_FALSE(read->gated_mlp);
  }
}

TEST(ModelFile, LlamaChainBecomesADecoderSpec) {
  const auto spec = DecoderFromModelFile(kDir + "/llama-small.toml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "llama-small");
  EXPECT_EQ(spec->layers, 2);
  EXPECT_EQ(spec->hidden, 32);
  EXPECT_EQ(spec->heads, 4);
  EXPECT_EQ(spec->kv_heads, 2);
  EXPECT_EQ(spec->ffn_hidden, 64);
  EXPECT_EQ(spec->vocab, 64);
  EXPECT_EQ(spec->max_positions, 0);  // RoPE: the file gives no context length
  EXPECT_FALSE(spec->learned_positions);
  EXPECT_FALSE(spec->bias);
  EXPECT_TRUE(spec->gated_mlp);
  TrainOptions options;
  options.model = kDir + "/llama-small.toml";
  options.p = 2;
  EXPECT_EQ(PlanTraining(options).status().message(),
            "--seq-len: model 'llama-small' uses rotary positions and gives no context length "
            "(max_positions); pass --seq-len");
  options.seq_len = 16;
  const auto plan = PlanTraining(options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->seq_len, 16);
  EXPECT_EQ(plan->piece_layers.size(), 2u);
}

// A chain mixing the two styles is refused at the first layer of the other style.
TEST(ModelFile, AMixedChainIsRefusedAtTheLayerOfTheOtherStyle) {
  std::ifstream in(kDir + "/llama-small.toml");
  const std::string original((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  const std::string path = ::testing::TempDir() + "mixed.toml";
  auto refused = [&](const std::string& text) {
    std::ofstream(path) << text;
    return DecoderFromModelFile(path).status().message();
  };
  std::string text = original;
  text.replace(text.rfind("ffn_hidden = 64\ngated = true"), 28, "ffn_hidden = 64");
  EXPECT_NE(refused(text).find("layer 'block1.mlp' (mlp) is not gated in a Llama-style chain"),
            std::string::npos)
      << refused(text);
  text = original;
  text.replace(text.find("hidden = 32\n\n[[layer]]\nname = \"head\""), 11,
               "hidden = 32\nbias = true");
  EXPECT_NE(refused(text).find("layer 'final_norm' (norm) is LayerNorm (bias = true) in a "
                               "Llama-style chain"),
            std::string::npos)
      << refused(text);
  text = original;
  text.replace(text.find("vocab = 64\nhidden = 32"), 22, "vocab = 64\nhidden = 32\npositions = 16");
  EXPECT_NE(refused(text).find("layer 'block0.attn' (attention) has no biases in a GPT-style "
                               "chain (the embedding has positions)"),
            std::string::npos)
      << refused(text);
}

TEST(ModelFile, ALlamaPresetsGraphGivesBackItsSpec) {
  const DecoderSpec& spec = *FindDecoderPreset("tiny-llama-tied");
  Result<ModelGraph> graph = BuildDecoder(spec, Workload{2, 8, DType::kFP32});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Result<DecoderSpec> read = DecoderFromGraph(*graph, "preset");
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->layers, spec.layers);
  EXPECT_EQ(read->hidden, spec.hidden);
  EXPECT_EQ(read->heads, spec.heads);
  EXPECT_EQ(read->kv_heads, spec.kv_heads);
  EXPECT_EQ(read->ffn_hidden, spec.ffn_hidden);
  EXPECT_EQ(read->vocab, spec.vocab);
  EXPECT_TRUE(read->tied_embeddings);
  EXPECT_FALSE(read->bias);
  EXPECT_FALSE(read->learned_positions);
  EXPECT_TRUE(read->gated_mlp);
  EXPECT_EQ(read->max_positions, 0);  // the graph has no table to read a context from
}

TEST(ModelFile, ABranchingGraphIsRefusedAtTheLayerThatJoins) {
  Result<ModelGraph> graph = BuildDecoder(*FindDecoderPreset("tiny"), Workload{2, 8, DType::kFP32});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  graph->Connect(1, 3, 1);  // block0.attn also feeds block1.attn
  Result<DecoderSpec> read = DecoderFromGraph(*graph, "g");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find("--model g: layer 'block1.attn' (attention) does not take "
                                         "just the layer before it"),
            std::string::npos)
      << read.status().message();
}

}  // namespace
}  // namespace pipette
