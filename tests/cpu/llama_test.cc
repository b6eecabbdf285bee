// The CPU engine's Llama block: every new kernel (RMSNorm, RoPE, SwiGLU, grouped-query attention)
// against closed forms and central finite differences, and every Llama module's input and
// parameter gradients against finite differences of a scalar of its output. The whole model's
// gradients and the I/W split are checked in gpt_test.cc with the GPT ones.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/gpt.h"
#include "cpu/tensor.h"
#include "pipette/engine/corpus.h"
#include "pipette/model/decoder.h"
#include "pipette/model/model_presets.h"
#include "small_specs.h"

namespace pipette::cpu {
namespace {

Tensor Random(int rows, int cols, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Tensor t(rows, cols);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = normal(rng);
  return t;
}

// sum over elements of w * y, in double: the scalar whose gradient with respect to y is w.
double Dot(const Tensor& w, const Tensor& y) {
  double sum = 0;
  for (std::size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(w[i]) * y[i];
  return sum;
}

// Every element of `x` against central differences of `loss`: |analytic - numeric| <= tol *
// max(1, |numeric|).
void ExpectGradient(Tensor& x, const Tensor& analytic, const std::function<double()>& loss,
                    double tol, const std::string& what) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  const float eps = 1e-2f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + eps;
    const double up = loss();
    x[i] = saved - eps;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * eps);
    ASSERT_NEAR(analytic[i], numeric, tol * std::max(1.0, std::abs(numeric)))
        << what << " element " << i;
  }
}

TEST(RmsNormKernel, ForwardIsTheClosedForm) {
  Tensor x(1, 2), gamma(1, 2), xhat(1, 2), rstd(1, 1), y(1, 2);
  x[0] = 3;
  x[1] = 4;
  gamma[0] = 1;
  gamma[1] = 2;
  RmsNormForward(x, gamma, xhat, rstd, y);
  const double r = 1.0 / std::sqrt((9.0 + 16.0) / 2 + 1e-5);  // mean(x^2) = 12.5
  EXPECT_NEAR(rstd[0], r, 1e-7);
  EXPECT_NEAR(xhat[0], 3 * r, 1e-6);
  EXPECT_NEAR(y[0], 3 * r, 1e-6);
  EXPECT_NEAR(y[1], 2 * 4 * r, 1e-6);
}

TEST(RmsNormKernel, InputAndWeightGradientsMatchFiniteDifferences) {
  Tensor x = Random(3, 8, 1), gamma = Random(1, 8, 2), w = Random(3, 8, 3);
  auto loss = [&] {
    Tensor xhat(3, 8), rstd(3, 1), y(3, 8);
    RmsNormForward(x, gamma, xhat, rstd, y);
    return Dot(w, y);
  };
  Tensor xhat(3, 8), rstd(3, 1), y(3, 8);
  RmsNormForward(x, gamma, xhat, rstd, y);
  Tensor dx(3, 8), dgamma(1, 8);
  RmsNormInputGrad(w, xhat, rstd, gamma, dx, false);
  RmsNormWeightGrad(w, xhat, dgamma);
  ExpectGradient(x, dx, loss, 2e-3, "dx");
  ExpectGradient(gamma, dgamma, loss, 2e-3, "dgamma");
  // Accumulating adds the same gradient to what dx holds.
  Tensor acc(3, 8);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = 1.0f;
  RmsNormInputGrad(w, xhat, rstd, gamma, acc, true);
  for (std::size_t i = 0; i < acc.size(); ++i) EXPECT_FLOAT_EQ(acc[i], 1.0f + dx[i]);
}

// One sequence of 2 tokens, one q, k and v head of width 4: position 0 is not rotated, position
// 1 rotates the pair (0, 2) by 1 radian and the pair (1, 3) by 10000^(-2/4) = 0.01 radian.
TEST(RopeKernel, RotatesPairsByTheClosedFormAngles) {
  Tensor qkv(2, 12);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 12; ++c) qkv.row(r)[c] = static_cast<float>(c % 4 + 1);  // 1 2 3 4
  }
  Rope(qkv, 2, 1, 1, false);
  for (int c = 0; c < 12; ++c) EXPECT_FLOAT_EQ(qkv.row(0)[c], static_cast<float>(c % 4 + 1));
  for (int head : {0, 1}) {  // q, then k
    const float* x = qkv.row(1) + 4 * head;
    EXPECT_NEAR(x[0], 1 * std::cos(1.0) - 3 * std::sin(1.0), 1e-6);
    EXPECT_NEAR(x[2], 3 * std::cos(1.0) + 1 * std::sin(1.0), 1e-6);
    EXPECT_NEAR(x[1], 2 * std::cos(0.01) - 4 * std::sin(0.01), 1e-6);
    EXPECT_NEAR(x[3], 4 * std::cos(0.01) + 2 * std::sin(0.01), 1e-6);
  }
  for (int c = 8; c < 12; ++c) EXPECT_EQ(qkv.row(1)[c], static_cast<float>(c % 4 + 1));  // v
}

TEST(RopeKernel, InverseUndoesTheForwardAndIsItsBackward) {
  const int seq = 5, heads = 4, kv_heads = 2, d = 8, cols = (heads + 2 * kv_heads) * d;
  Tensor x = Random(2 * seq, cols, 4);  // two sequences
  Tensor y = x.Clone();
  Rope(y, seq, heads, kv_heads, false);
  double norm_x = 0, norm_y = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    norm_x += x[i] * x[i];
    norm_y += y[i] * y[i];
  }
  EXPECT_NEAR(norm_y, norm_x, 1e-4 * norm_x);  // a rotation
  EXPECT_NE(y[cols + 1], x[cols + 1]);         // position 1 moved
  Rope(y, seq, heads, kv_heads, true);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], 1e-5) << i;
  // d/dx sum(w * Rope(x)) = Rope^-1(w).
  const Tensor w = Random(2 * seq, cols, 5);
  Tensor grad = w.Clone();
  Rope(grad, seq, heads, kv_heads, true);
  auto loss = [&] {
    Tensor r = x.Clone();
    Rope(r, seq, heads, kv_heads, false);
    return Dot(w, r);
  };
  ExpectGradient(x, grad, loss, 1e-3, "dx");
}

TEST(SwigluKernel, ForwardIsSiluOfGateTimesUp) {
  Tensor gate_up(1, 4), y(1, 2);
  gate_up[0] = 0;  // gate
  gate_up[1] = 1;
  gate_up[2] = 5;  // up
  gate_up[3] = 2;
  SwigluForward(gate_up, y);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 1.0 / (1.0 + std::exp(-1.0)) * 2, 1e-6);
}

TEST(SwigluKernel, InputGradientMatchesFiniteDifferences) {
  Tensor gate_up = Random(4, 12, 6, 2.0f), w = Random(4, 6, 7);
  Tensor dgate_up(4, 12);
  SwigluInputGrad(w, gate_up, dgate_up);
  auto loss = [&] {
    Tensor y(4, 6);
    SwigluForward(gate_up, y);
    return Dot(w, y);
  };
  ExpectGradient(gate_up, dgate_up, loss, 2e-3, "dgate_up");
}

// Grouped-query attention: 2 sequences of 4 tokens, 4 query heads sharing 2 kv heads of width 4.
TEST(GqaAttentionKernel, InputGradientMatchesFiniteDifferences) {
  const int batch = 2, seq = 4, heads = 4, kv = 2, d = 4;
  Tensor qkv = Random(batch * seq, (heads + 2 * kv) * d, 8), w = Random(batch * seq, heads * d, 9);
  auto loss = [&] {
    Tensor probs(batch * heads * seq, seq), out(batch * seq, heads * d);
    AttentionForward(qkv, batch, seq, heads, kv, probs, out);
    return Dot(w, out);
  };
  Tensor probs(batch * heads * seq, seq), out(batch * seq, heads * d);
  AttentionForward(qkv, batch, seq, heads, kv, probs, out);
  Tensor dqkv(batch * seq, qkv.cols());
  AttentionInputGrad(w, qkv, probs, batch, seq, heads, kv, dqkv);
  ExpectGradient(qkv, dqkv, loss, 2e-3, "dqkv");
}

// GQA is multi-head attention with each kv head copied to the query heads of its group: the
// outputs agree, and a kv head's gradient is the sum of its copies'.
TEST(GqaAttentionKernel, EqualsMultiHeadAttentionWithSharedKvHeadsCopied) {
  const int batch = 1, seq = 6, heads = 4, kv = 2, d = 4, group = heads / kv;
  const Tensor gqa = Random(batch * seq, (heads + 2 * kv) * d, 10);
  Tensor mha(batch * seq, 3 * heads * d);
  for (int r = 0; r < batch * seq; ++r) {
    for (int j = 0; j < heads; ++j) {
      for (int c = 0; c < d; ++c) {
        mha.row(r)[j * d + c] = gqa.row(r)[j * d + c];
        mha.row(r)[(heads + j) * d + c] = gqa.row(r)[(heads + j / group) * d + c];
        mha.row(r)[(2 * heads + j) * d + c] = gqa.row(r)[(heads + kv + j / group) * d + c];
      }
    }
  }
  Tensor p1(batch * heads * seq, seq), o1(batch * seq, heads * d);
  Tensor p2(batch * heads * seq, seq), o2(batch * seq, heads * d);
  AttentionForward(gqa, batch, seq, heads, kv, p1, o1);
  AttentionForward(mha, batch, seq, heads, heads, p2, o2);
  for (std::size_t i = 0; i < o1.size(); ++i) ASSERT_NEAR(o1[i], o2[i], 1e-6) << i;
  const Tensor w = Random(batch * seq, heads * d, 11);
  Tensor d1(batch * seq, gqa.cols()), d2(batch * seq, mha.cols());
  AttentionInputGrad(w, gqa, p1, batch, seq, heads, kv, d1);
  AttentionInputGrad(w, mha, p2, batch, seq, heads, heads, d2);
  for (int r = 0; r < batch * seq; ++r) {
    for (int g = 0; g < kv; ++g) {
      for (int c = 0; c < d; ++c) {
        float dk = 0, dv = 0;
        for (int j = g * group; j < (g + 1) * group; ++j) {
          dk += d2.row(r)[(heads + j) * d + c];
          dv += d2.row(r)[(2 * heads + j) * d + c];
        }
        EXPECT_NEAR(d1.row(r)[(heads + g) * d + c], dk, 1e-5);
        EXPECT_NEAR(d1.row(r)[(heads + kv + g) * d + c], dv, 1e-5);
      }
    }
  }
}

// A module's dx and every parameter gradient against central differences of sum(w * y) over
// 2 sequences of 5 tokens (so RoPE sees positions 0..4 twice), with weights of order 1.
void CheckModule(const std::string& layer) {
  const DecoderSpec spec = test_specs::SmallLlamaSpec(false);
  std::unique_ptr<Module> module = MakeModule(spec, layer, 3).value();
  // Weights of order 1 instead of the initial 0.02: scores far from uniform, so the q and k paths
  // (RoPE, the softmax) carry gradients the tolerance can see.
  std::uint32_t seed = 20;
  for (Param& param : module->params()) {
    const Tensor values = Random(param.value.rows(), param.value.cols(), seed++, 0.5f);
    for (std::size_t i = 0; i < values.size(); ++i) param.value[i] += values[i];
  }
  Batch batch = MakeBatch(spec.vocab, 0, 2, 5, 1.0f);
  Tensor x = Random(batch.num_tokens(), spec.hidden, 12);
  const Tensor w = Random(batch.num_tokens(), spec.hidden, 13);
  auto loss = [&] {
    Cache cache;
    return Dot(w, module->Forward(batch, x.Clone(), cache));
  };
  Cache cache;
  module->Forward(batch, x.Clone(), cache);
  const Tensor dx = module->InputGrad(batch, w.Clone(), cache);
  module->WeightGrad(batch, cache);
  EXPECT_TRUE(cache.saved.empty());
  ExpectGradient(x, dx, loss, 1e-2, layer + " dx");
  for (Param& param : module->params()) {
    ExpectGradient(param.value, param.grad, loss, 1e-2, param.name);
  }
}

TEST(LlamaModules, AttentionHalfGradientsMatchFiniteDifferences) { CheckModule("block1.attn"); }
TEST(LlamaModules, MlpHalfGradientsMatchFiniteDifferences) { CheckModule("block0.mlp"); }
TEST(LlamaModules, FinalRmsNormGradientsMatchFiniteDifferences) { CheckModule("final_norm"); }

// The conventions the CUDA engine mirrors: names, shapes, initial values, decay.
TEST(LlamaModules, ParametersFollowTheConventions) {
  const DecoderSpec spec =
      test_specs::SmallLlamaSpec(false);  // h 16, 4 heads of 4, 2 kv heads, f 24, 2 layers
  struct Expected {
    std::string layer, name;
    int rows, cols;
    bool decay;
    float std;  // 0: filled with 1
  };
  const float proj_std = 0.02f / std::sqrt(4.0f);
  const std::vector<Expected> expected = {
      {"embedding", "embedding.wte", 11, 16, false, 0.02f},
      {"block0.attn", "block0.attn.norm.weight", 1, 16, false, 0},
      {"block0.attn", "block0.attn.qkv.weight", (4 + 2 * 2) * 4, 16, true, 0.02f},
      {"block0.attn", "block0.attn.proj.weight", 16, 16, true, proj_std},
      {"block0.mlp", "block0.mlp.norm.weight", 1, 16, false, 0},
      {"block0.mlp", "block0.mlp.fc.weight", 48, 16, true, 0.02f},
      {"block0.mlp", "block0.mlp.proj.weight", 16, 24, true, proj_std},
      {"final_norm", "final_norm.weight", 1, 16, false, 0},
      {"head", "head.weight", 11, 16, true, 0.02f},
  };
  std::map<std::string, int> index;
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.name);
    std::unique_ptr<Module> module = MakeModule(spec, e.layer, 5).value();
    const Param& p = module->params().at(index[e.layer]++);
    EXPECT_EQ(p.name, e.name);
    EXPECT_EQ(p.value.rows(), e.rows);
    EXPECT_EQ(p.value.cols(), e.cols);
    EXPECT_EQ(p.decay, e.decay);
    double sq = 0;
    for (std::size_t i = 0; i < p.value.size(); ++i) {
      if (e.std == 0) {
        ASSERT_EQ(p.value[i], 1.0f);
      }
      sq += p.value[i] * p.value[i];
    }
    if (e.std > 0) {
      EXPECT_NEAR(std::sqrt(sq / p.value.size()), e.std, 0.3 * e.std);
    }
  }
  for (const auto& [layer, count] : index) {
    EXPECT_EQ(static_cast<int>(MakeModule(spec, layer, 5).value()->params().size()), count)
        << layer;  // nothing else: no biases, no position table
  }
}

std::int64_t Bytes(const Cache& cache) {
  std::int64_t bytes = 0;
  for (const Tensor& tensor : cache.saved) bytes += tensor.bytes();
  return bytes;
}

// What the engine keeps per microbatch, layer by layer, against the model graph's formulas for
// tiny-llama at 4 x 32 tokens: after F every layer keeps its activation_bytes, plus the fp32
// 1/rms statistics (4 bytes a token) of each RMSNorm; the ids and labels live in the batch. From I
// to W the graph counts the inputs of the weight GEMMs; the engine also keeps what W multiplies
// them with, the output gradients, and each norm's xhat (the gamma gradient).
TEST(LlamaMemory, EngineKeepsWhatTheGraphCountsPlusTheNormStatistics) {
  const DecoderSpec& spec = *FindDecoderPreset("tiny-llama");
  const std::int64_t b = 4, s = 32, t = b * s, h = spec.hidden, f = spec.ffn_hidden;
  const std::int64_t kv = spec.kv_heads * (h / spec.heads), vocab = spec.vocab;
  const ModelGraph graph = BuildDecoder(spec, Workload{b, s, DType::kFP32}).value();
  const Batch batch = MakeBatch(spec.vocab, 0, b, s, 1.0f / t);
  const std::vector<std::string> names = LayerNames(spec);
  ASSERT_EQ(names.size(), graph.num_layers());
  std::vector<std::unique_ptr<Module>> modules;
  std::vector<Cache> caches(names.size());
  std::vector<std::int64_t> after_f, after_i(names.size());
  Tensor x;
  for (std::size_t i = 0; i < names.size(); ++i) {
    modules.push_back(MakeModule(spec, names[i], 1).value());
    x = modules[i]->Forward(batch, std::move(x), caches[i]);
    after_f.push_back(Bytes(caches[i]));
  }
  Tensor dy;
  for (std::size_t i = names.size(); i-- > 0;) {
    dy = modules[i]->InputGrad(batch, std::move(dy), caches[i]);
    after_i[i] = Bytes(caches[i]);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Layer& layer = graph.layer(static_cast<LayerId>(i));
    SCOPED_TRACE(layer.name);
    ASSERT_EQ(layer.name, names[i]);
    const std::string& type = layer.type;
    const std::int64_t norm_stats =
        type == "attention" || type == "mlp" || type == "norm" ? 4 * t : 0;
    const std::int64_t in_batch = type == "embedding" || type == "loss" ? 4 * t : 0;
    EXPECT_EQ(after_f[i], layer.activation_bytes + norm_stats - in_batch);
    // Held from I to W beyond the graph's weight-GEMM inputs (the embedding's ids are the batch's).
    std::int64_t extra = 0;
    if (type == "attention") extra = 4 * t * (h + (h + 2 * kv) + h + h);  // dy, dqkv, da, xhat
    if (type == "mlp") extra = 4 * t * (h + 2 * f + h + h);               // dy, dgate_up, da, xhat
    if (type == "norm") extra = 4 * t * (h + h);                          // dy, xhat
    if (type == "head") extra = 4 * t * vocab;                            // dlogits
    if (type == "embedding") extra = 4 * t * h - 4 * t;  // dy, scattered by W; not the ids
    EXPECT_EQ(after_i[i], layer.wgrad_input_bytes + extra);
  }
  // The closed forms, tiny-llama (h 64, kv width 32, f 128) at T = 128 tokens.
  EXPECT_EQ(graph.layer(1).activation_bytes, 4 * t * (4 * h + 2 * kv) + 4 * b * 4 * s * s);
  EXPECT_EQ(graph.layer(2).activation_bytes, 4 * t * (2 * h + 3 * f));
}

}  // namespace
}  // namespace pipette::cpu
