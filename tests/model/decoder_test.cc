#include "pipette/model/decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "pipette/model/model_presets.h"

namespace pipette {
namespace {

ModelGraph MustBuild(const DecoderSpec& spec, const Workload& workload) {
  Result<ModelGraph> model = BuildDecoder(spec, workload);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : ModelGraph{};
}

const DecoderSpec& Preset(std::string_view name) {
  const DecoderSpec* spec = FindDecoderPreset(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

std::string ErrorOf(const DecoderSpec& spec, const Workload& workload = {}) {
  Result<ModelGraph> model = BuildDecoder(spec, workload);
  EXPECT_FALSE(model.ok()) << spec.name << " accepted";
  if (model.ok()) return "";
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  return model.status().message();
}

// Weight-matrix parameters of one block (no biases, no norms): Q, K, V, O and the MLP matrices.
double BlockMatrixParams(const DecoderSpec& s) {
  const double h = s.hidden;
  const double kv = static_cast<double>(s.kv_heads) * (s.hidden / s.heads);
  return 2 * h * h + 2 * h * kv + (s.gated_mlp ? 3 : 2) * h * s.ffn_hidden;
}

double TotalFlops(const ModelGraph& model) {
  double total = 0;
  for (std::size_t v = 0; v < model.num_layers(); ++v) {
    const Layer& layer = model.layer(v);
    total += layer.fwd_flops + layer.igrad_flops + layer.wgrad_flops;
  }
  return total;
}

TEST(Decoder, IsAChainOfEmbeddingBlocksNormHeadAndLoss) {
  const Workload workload{2, 512, DType::kBF16};
  const ModelGraph model = MustBuild(Preset("gpt2-124m"), workload);
  std::vector<std::string> expected = {"embedding"};
  for (int i = 0; i < 12; ++i) {
    expected.push_back("block" + std::to_string(i) + ".attn");
    expected.push_back("block" + std::to_string(i) + ".mlp");
  }
  expected.insert(expected.end(), {"final_norm", "head", "loss"});
  ASSERT_EQ(model.num_layers(), expected.size());
  for (std::size_t v = 0; v < expected.size(); ++v) {
    EXPECT_EQ(model.layer(v).name, expected[v]);
    EXPECT_EQ(model.layer(v).region, "main");
  }
  EXPECT_EQ(boost::num_edges(model.graph), expected.size() - 1);
  const std::int64_t activation = 2 * 512 * 768 * 2;  // b·s·h·bytes
  for (std::size_t v = 0; v + 1 < expected.size(); ++v) {
    auto [edge, found] = boost::edge(v, v + 1, model.graph);
    ASSERT_TRUE(found) << expected[v] << " -> " << expected[v + 1];
    const std::int64_t bytes =
        expected[v] == "head" ? std::int64_t{2} * 512 * 50257 * 2 : activation;
    EXPECT_EQ(model.graph[edge].bytes, bytes) << expected[v];
  }
  Result<std::vector<LayerId>> order = model.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  for (std::size_t v = 0; v < order->size(); ++v) EXPECT_EQ((*order)[v], v);
}

TEST(Decoder, SetsAttributesAndWorkload) {
  const Workload workload{4, 4096, DType::kFP16};
  const ModelGraph model = MustBuild(Preset("llama3-70b"), workload);
  EXPECT_EQ(model.name, "llama3-70b");
  EXPECT_EQ(model.workload.micro_batch_size, 4);
  EXPECT_EQ(model.workload.seq_len, 4096);
  EXPECT_EQ(model.workload.dtype, DType::kFP16);
  EXPECT_EQ(model.attributes.blocks, 80);
  EXPECT_EQ(model.attributes.hidden, 8192);
  EXPECT_EQ(model.attributes.heads, 64);
  EXPECT_EQ(model.attributes.kv_heads, 8);
  EXPECT_EQ(model.attributes.vocab, 128256);
}

// Per token, the GEMM FLOPs of a training step are exactly 6·(matrix params, the LM head
// included even when tied) + 12·L·h·s: 2 forward + 2 input-gradient + 2 weight-gradient per
// weight, and 4·s·h forward per block for QKᵀ and P·V with twice that backward.
TEST(Decoder, FlopsPerTokenAreSixNPlusTwelveLhs) {
  const Workload workload{2, 2048, DType::kBF16};
  for (const DecoderSpec& spec : DecoderPresets()) {
    if (spec.experts > 0) continue;  // moe_test.cc: 6 x the activated matrices
    const ModelGraph model = MustBuild(spec, workload);
    const double tokens = 2.0 * 2048;
    const double per_token = TotalFlops(model) / tokens;
    const double matrices =
        spec.layers * BlockMatrixParams(spec) + static_cast<double>(spec.vocab) * spec.hidden;
    const double attention = 12.0 * spec.layers * spec.hidden * 2048;
    EXPECT_NEAR(per_token / (6 * matrices + attention), 1.0, 1e-12) << spec.name;

    // Kaplan et al.'s 6N + 12Lhs with N the non-embedding parameters plus the LM head matrix:
    // off only by biases and norms.
    const Layer& embedding = model.layer(0);
    const double n = static_cast<double>(model.TotalParams() - embedding.params) +
                     (spec.tied_embeddings ? static_cast<double>(spec.vocab) * spec.hidden : 0);
    const double deviation = per_token / (6 * n + attention) - 1;
    EXPECT_LT(std::abs(deviation), 0.02) << spec.name;
    std::printf("%-12s FLOPs/token %.6e  6N+12Lhs %.6e  deviation %+.4f%%\n", spec.name.c_str(),
                per_token, 6 * n + attention, 100 * deviation);
  }
}

// Narayanan et al. 2021, §5.1: a GPT training step costs 72·B·s·L·h²·(1 + s/(6h) + V/(12hL)).
TEST(Decoder, GptStepFlopsMatchNarayanan) {
  const DecoderSpec& spec = Preset("gpt3-175b");
  const double b = 4, s = 2048, l = 96, h = 12288, v = 50257;
  const ModelGraph model = MustBuild(spec, Workload{4, 2048, DType::kBF16});
  const double expected = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * h * l));
  EXPECT_NEAR(TotalFlops(model) / expected, 1.0, 1e-12);
}

TEST(Decoder, BackwardOfEveryLayerIsTwiceItsForward) {
  const Workload workload{1, 1024, DType::kBF16};
  for (const DecoderSpec& spec : DecoderPresets()) {
    const ModelGraph model = MustBuild(spec, workload);
    for (std::size_t v = 0; v < model.num_layers(); ++v) {
      const Layer& layer = model.layer(v);
      EXPECT_DOUBLE_EQ(layer.igrad_flops + layer.wgrad_flops, 2 * layer.fwd_flops)
          << spec.name << " " << layer.name;
      if (layer.type == "mlp" || layer.type == "head") {
        EXPECT_DOUBLE_EQ(layer.igrad_flops, layer.fwd_flops) << layer.name;
        EXPECT_DOUBLE_EQ(layer.wgrad_flops, layer.fwd_flops) << layer.name;
      }
    }
  }
}

TEST(Decoder, AttentionBackwardPutsTheScoreMatmulsInI) {
  const DecoderSpec& spec = Preset("llama3-8b");
  const double b = 2, s = 4096, h = 4096, kv = 1024;
  const ModelGraph model = MustBuild(spec, Workload{2, 4096, DType::kBF16});
  const Layer& attn = model.layer(1);
  ASSERT_EQ(attn.name, "block0.attn");
  const double weights = 2 * b * s * h * (h + 2 * kv) + 2 * b * s * h * h;
  const double core = 2 * (2 * b * s * s * h);  // QKᵀ and P·V over all heads
  EXPECT_DOUBLE_EQ(attn.fwd_flops, weights + core);
  EXPECT_DOUBLE_EQ(attn.wgrad_flops, weights);
  EXPECT_DOUBLE_EQ(attn.igrad_flops, weights + 2 * core);
  const Layer& mlp = model.layer(2);
  EXPECT_DOUBLE_EQ(mlp.fwd_flops, 3 * 2 * b * s * h * 14336);
}

TEST(Decoder, ParamsDoNotDependOnTheWorkload) {
  for (const DecoderSpec& spec : DecoderPresets()) {
    const ModelGraph small = MustBuild(spec, Workload{1, 16, DType::kFP32});
    const ModelGraph large = MustBuild(spec, Workload{8, 4096, DType::kFP8});
    EXPECT_EQ(small.TotalParams(), large.TotalParams()) << spec.name;
  }
}

TEST(Decoder, FlopsAndBytesAreLinearInTheBatch) {
  const DecoderSpec& spec = Preset("gpt3-1.3b");
  const ModelGraph one = MustBuild(spec, Workload{1, 1024, DType::kBF16});
  const ModelGraph three = MustBuild(spec, Workload{3, 1024, DType::kBF16});
  for (std::size_t v = 0; v < one.num_layers(); ++v) {
    const Layer& a = one.layer(v);
    const Layer& b = three.layer(v);
    EXPECT_DOUBLE_EQ(b.fwd_flops, 3 * a.fwd_flops) << a.name;
    EXPECT_DOUBLE_EQ(b.igrad_flops, 3 * a.igrad_flops) << a.name;
    EXPECT_DOUBLE_EQ(b.wgrad_flops, 3 * a.wgrad_flops) << a.name;
    EXPECT_EQ(b.activation_bytes, 3 * a.activation_bytes) << a.name;
    if (a.type != "loss") {
      EXPECT_EQ(b.output_bytes, 3 * a.output_bytes) << a.name;
    }
  }
}

// GEMMs are linear in s; the attention scores and context are quadratic.
TEST(Decoder, FlopsAreLinearInTheSequenceExceptAttentionScores) {
  const DecoderSpec& spec = Preset("llama2-7b");
  const ModelGraph short_seq = MustBuild(spec, Workload{1, 1024, DType::kBF16});
  const ModelGraph long_seq = MustBuild(spec, Workload{1, 2048, DType::kBF16});
  for (std::size_t v = 0; v < short_seq.num_layers(); ++v) {
    const Layer& a = short_seq.layer(v);
    const Layer& b = long_seq.layer(v);
    if (a.type == "attention") {
      // wgrad is the weight GEMMs alone; fwd - wgrad and igrad - fwd are the score matmuls.
      EXPECT_DOUBLE_EQ(b.wgrad_flops, 2 * a.wgrad_flops) << a.name;
      EXPECT_DOUBLE_EQ(b.fwd_flops - b.wgrad_flops, 4 * (a.fwd_flops - a.wgrad_flops)) << a.name;
      EXPECT_DOUBLE_EQ(b.igrad_flops - b.fwd_flops, 4 * (a.igrad_flops - a.fwd_flops)) << a.name;
    } else {
      EXPECT_DOUBLE_EQ(b.fwd_flops, 2 * a.fwd_flops) << a.name;
      EXPECT_DOUBLE_EQ(b.igrad_flops, 2 * a.igrad_flops) << a.name;
      EXPECT_DOUBLE_EQ(b.wgrad_flops, 2 * a.wgrad_flops) << a.name;
    }
  }
}

TEST(Decoder, GroupedQueryAttentionShrinksKAndV) {
  DecoderSpec gqa = Preset("llama3-8b");  // 32 query heads, 8 K/V heads: K and V are h × h/4
  DecoderSpec mha = gqa;
  mha.kv_heads = mha.heads;
  const Workload workload{1, 128, DType::kBF16};
  const ModelGraph with_gqa = MustBuild(gqa, workload);
  const ModelGraph without = MustBuild(mha, workload);
  const std::int64_t per_layer = 2 * std::int64_t{4096} * (4096 - 1024);
  EXPECT_EQ(without.layer(1).params - with_gqa.layer(1).params, per_layer);
  EXPECT_EQ(without.TotalParams() - with_gqa.TotalParams(), 32 * per_layer);
  // Attention scores do not depend on the K/V heads.
  EXPECT_DOUBLE_EQ(without.layer(1).igrad_flops - without.layer(1).wgrad_flops,
                   with_gqa.layer(1).igrad_flops - with_gqa.layer(1).wgrad_flops);
}

TEST(Decoder, TiedEmbeddingsSaveVocabTimesHidden) {
  DecoderSpec tied = Preset("gpt2-124m");
  DecoderSpec untied = tied;
  untied.tied_embeddings = false;
  const Workload workload{1, 256, DType::kBF16};
  const ModelGraph a = MustBuild(tied, workload);
  const ModelGraph b = MustBuild(untied, workload);
  EXPECT_EQ(b.TotalParams() - a.TotalParams(), std::int64_t{50257} * 768);
  const Layer& tied_head = a.layer(a.num_layers() - 2);
  const Layer& untied_head = b.layer(b.num_layers() - 2);
  ASSERT_EQ(tied_head.name, "head");
  EXPECT_EQ(tied_head.params, 0);
  EXPECT_EQ(untied_head.params, std::int64_t{50257} * 768);
  EXPECT_DOUBLE_EQ(tied_head.fwd_flops, untied_head.fwd_flops);  // still computes the logits
  EXPECT_DOUBLE_EQ(tied_head.fwd_flops, 2.0 * 256 * 768 * 50257);
}

TEST(Decoder, LearnedPositionsAddATableOfMaxPositionsRows) {
  DecoderSpec learned = Preset("gpt2-124m");
  DecoderSpec rope = learned;
  rope.learned_positions = false;
  const ModelGraph a = MustBuild(learned, Workload{1, 64, DType::kBF16});
  const ModelGraph b = MustBuild(rope, Workload{1, 64, DType::kBF16});
  EXPECT_EQ(a.layer(0).params, std::int64_t{50257 + 1024} * 768);
  EXPECT_EQ(a.TotalParams() - b.TotalParams(), std::int64_t{1024} * 768);
}

// Korthikanti et al. 2022, §4.1: a GPT block keeps s·b·h·(34 + 5·a·s/h) bytes at 16 bits.
TEST(Decoder, BlockActivationsMatchKorthikanti) {
  const DecoderSpec& spec = Preset("gpt3-175b");
  const std::int64_t s = 2048, b = 1, h = 12288, a = 96;
  const ModelGraph model = MustBuild(spec, Workload{1, 2048, DType::kBF16});
  const std::int64_t block = model.layer(1).activation_bytes + model.layer(2).activation_bytes;
  EXPECT_EQ(block, s * b * h * 34 + 5 * a * s * s * b);
  EXPECT_EQ(model.layer(1).activation_bytes, 13 * s * b * h + 5 * a * s * s * b);
  EXPECT_EQ(model.layer(2).activation_bytes, 21 * s * b * h);
  // Full recomputation keeps only each vertex's input.
  EXPECT_EQ(model.layer(1).activation_bytes_recompute, 2 * s * b * h);
  EXPECT_EQ(model.layer(2).activation_bytes_recompute, 2 * s * b * h);
  // W needs the inputs of the QKV and output projections, and of both MLP matrices.
  EXPECT_EQ(model.layer(1).wgrad_input_bytes, 2 * (2 * s * b * h));
  EXPECT_EQ(model.layer(2).wgrad_input_bytes, 2 * s * b * (h + 4 * h));
}

TEST(Decoder, GatedMlpAndGqaActivations) {
  const ModelGraph model = MustBuild(Preset("llama3-8b"), Workload{1, 1024, DType::kBF16});
  const std::int64_t s = 1024, h = 4096, kv = 1024, f = 14336, a = 32;
  // Llama trains without dropout: no masks, no dropout output.
  EXPECT_EQ(model.layer(1).activation_bytes, 2 * s * (4 * h + 2 * kv) + 2 * a * s * s);
  EXPECT_EQ(model.layer(2).activation_bytes, 2 * s * (2 * h + 3 * f));
}

TEST(Decoder, TensorParallelCollectivesAndSharding) {
  const std::int64_t activation = 2 * 1024 * 4096 * 2;
  const ModelGraph model = MustBuild(Preset("llama2-7b"), Workload{2, 1024, DType::kBF16});
  for (std::size_t v = 0; v < model.num_layers(); ++v) {
    const Layer& layer = model.layer(v);
    const bool all_reduces =
        layer.type == "embedding" || layer.type == "attention" || layer.type == "mlp";
    EXPECT_EQ(layer.tp_allreduce_bytes, all_reduces ? activation : 0) << layer.name;
    EXPECT_EQ(layer.tp_sharded, layer.type != "norm" && layer.type != "loss") << layer.name;
    EXPECT_GT(layer.hbm_bytes, 0) << layer.name;
    EXPECT_GT(layer.output_bytes, 0) << layer.name;
  }
}

TEST(Decoder, RejectsInvalidSpecsNamingKeyValueAndRule) {
  DecoderSpec spec = Preset("gpt2-124m");
  spec.name = "bad";
  DecoderSpec s = spec;
  s.layers = 0;
  EXPECT_EQ(ErrorOf(s), "model 'bad': layers = 0: must be >= 1");
  s = spec;
  s.hidden = 770;
  EXPECT_EQ(ErrorOf(s), "model 'bad': hidden = 770, heads = 12: hidden must be divisible by heads");
  s = spec;
  s.kv_heads = 5;
  EXPECT_EQ(ErrorOf(s),
            "model 'bad': heads = 12, kv_heads = 5: heads must be divisible by kv_heads (each K/V "
            "head serves heads/kv_heads query heads)");
  s = spec;
  s.vocab = 1 << 21;
  EXPECT_EQ(ErrorOf(s), "model 'bad': vocab = 2097152: more than the limit of 1048576");
  s = spec;
  s.max_positions = 0;
  EXPECT_EQ(ErrorOf(s), "model 'bad': max_positions = 0: must be >= 1");
  EXPECT_EQ(ErrorOf(spec, Workload{0, 1024, DType::kBF16}),
            "model 'bad': micro_batch_size = 0: must be >= 1");
  EXPECT_EQ(ErrorOf(spec, Workload{64, 1 << 20, DType::kBF16}),
            "model 'bad': micro_batch_size = 64, seq_len = 1048576: 67108864 tokens per "
            "microbatch, more than the limit of 16777216");
}

}  // namespace
}  // namespace pipette
