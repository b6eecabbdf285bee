// The CPU engine's math: every parameter gradient of the GPT and the Llama models against central
// finite differences of the loss, the I/W split against the full backward, and initialisation
// that does not depend on how the model is cut. (The Llama kernels and modules alone:
// llama_test.cc.)
#include "cpu/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/param_set.h"
#include "pipette/engine/corpus.h"
#include "pipette/engine/train_plan.h"
#include "pipette/model/model_presets.h"
#include "small_specs.h"

namespace pipette::cpu {
namespace {

using test_specs::SmallGptSpec;
using test_specs::SmallLlamaSpec;

ModuleChain WholeModel(const DecoderSpec& spec, std::uint64_t seed) {
  ModuleChain chain;
  for (const std::string& layer : LayerNames(spec)) {
    chain.Add(std::move(MakeModule(spec, layer, seed).value()));
  }
  return chain;
}

double Loss(ModuleChain& model, const Batch& batch) {
  std::vector<Cache> caches;
  model.Forward(batch, Tensor(), caches);
  return caches.back().loss;
}

// For every parameter tensor: the directional derivative along a random direction inside that
// tensor, by central differences of the loss, against the analytic gradient's projection.
// `perturb` > 0 adds N(0, perturb^2) to every weight (every copy alike) first, so that attention
// is far from uniform and the q and k paths carry gradients the tolerance can see.
void CheckGradients(const DecoderSpec& spec, float perturb = 0) {
  ModuleChain model = WholeModel(spec, 7);
  ParamSet params;
  params.Add(model);
  std::mt19937 init_rng(11);
  std::normal_distribution<float> init(0.0f, perturb);
  for (auto& [name, entry] : params.entries()) {
    if (perturb == 0) break;
    for (std::size_t i = 0; i < entry.copies.front()->value.size(); ++i) {
      const float delta = init(init_rng);
      for (Param* copy : entry.copies) copy->value[i] += delta;
    }
  }
  const Batch batch = MakeBatch(spec.vocab, 0, 3, 8, 1.0f / 24);  // 3 x 8 tokens, mean loss
  std::vector<Cache> caches;
  model.Forward(batch, Tensor(), caches);
  model.InputGrad(batch, Tensor(), caches);
  model.WeightGrad(batch, caches);
  params.SumLocalCopies();

  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (auto& [name, entry] : params.entries()) {
    SCOPED_TRACE(name);
    const Tensor& grad = entry.copies.front()->grad;
    std::vector<float> direction(grad.size());
    double analytic = 0, norm = 0;
    for (std::size_t i = 0; i < direction.size(); ++i) {
      direction[i] = normal(rng);
      norm += direction[i] * direction[i];
    }
    for (std::size_t i = 0; i < direction.size(); ++i) {
      direction[i] /= static_cast<float>(std::sqrt(norm));
      analytic += static_cast<double>(direction[i]) * grad[i];
    }
    auto shift = [&](float eps) {  // moves every copy, as the optimizer would
      for (Param* copy : entry.copies) {
        for (std::size_t i = 0; i < direction.size(); ++i) copy->value[i] += eps * direction[i];
      }
    };
    const float eps = 1e-2f;
    shift(eps);
    const double up = Loss(model, batch);
    shift(-2 * eps);
    const double down = Loss(model, batch);
    shift(eps);
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, 2e-3 * std::max(1.0, std::abs(numeric)) + 2e-4)
        << "analytic " << analytic << " numeric " << numeric;
  }
}

TEST(GptGradients, MatchFiniteDifferencesForEveryParameter) { CheckGradients(SmallGptSpec(false)); }

TEST(GptGradients, TiedHeadSumsBothUsesOfTheTable) { CheckGradients(SmallGptSpec(true)); }

TEST(LlamaGradients, MatchFiniteDifferencesForEveryParameter) {
  CheckGradients(SmallLlamaSpec(false));
  CheckGradients(SmallLlamaSpec(false), 0.3f);
}

TEST(LlamaGradients, TiedHeadSumsBothUsesOfTheTable) {
  CheckGradients(SmallLlamaSpec(true));
  CheckGradients(SmallLlamaSpec(true), 0.3f);
}

void CheckInputThenWeightEqualsFullBackward(const DecoderSpec& spec) {
  const Batch batch = MakeBatch(spec.vocab, 5, 2, 8, 1.0f / 16);
  ModuleChain a = WholeModel(spec, 1);
  ModuleChain b = WholeModel(spec, 1);
  std::vector<Cache> ca, cb;
  a.Forward(batch, Tensor(), ca);
  b.Forward(batch, Tensor(), cb);
  a.InputGrad(batch, Tensor(), ca);
  const std::int64_t held = ModuleChain::CacheBytes(ca);
  EXPECT_GT(held, 0);  // the inputs of the weight gradients wait for W
  a.WeightGrad(batch, ca);
  EXPECT_EQ(ModuleChain::CacheBytes(ca), 0);
  b.InputGrad(batch, Tensor(), cb);
  b.WeightGrad(batch, cb);
  for (std::size_t m = 0; m < a.modules().size(); ++m) {
    auto& pa = a.modules()[m]->params();
    auto& pb = b.modules()[m]->params();
    for (std::size_t k = 0; k < pa.size(); ++k) {
      for (std::size_t i = 0; i < pa[k].grad.size(); ++i) {
        ASSERT_EQ(pa[k].grad[i], pb[k].grad[i]) << pa[k].name;
      }
    }
  }
}

TEST(GptGradients, InputThenWeightEqualsFullBackwardAndFreesTheCache) {
  CheckInputThenWeightEqualsFullBackward(SmallGptSpec(false));
}

TEST(LlamaGradients, InputThenWeightEqualsFullBackwardAndFreesTheCache) {
  CheckInputThenWeightEqualsFullBackward(SmallLlamaSpec(false));
}

TEST(GptInit, DependsOnSeedAndNameOnly) {
  const DecoderSpec spec = SmallGptSpec(true);
  auto head = MakeModule(spec, "head", 42).value();
  auto embedding = MakeModule(spec, "embedding", 42).value();
  auto other_seed = MakeModule(spec, "embedding", 43).value();
  const Tensor& tied = head->params().front().value;
  EXPECT_EQ(head->params().front().name, "embedding.wte");
  for (std::size_t i = 0; i < tied.size(); ++i) {
    ASSERT_EQ(tied[i], embedding->params().front().value[i]);
  }
  EXPECT_NE(tied[0], other_seed->params().front().value[0]);
  // Standard deviation of the initial table is 0.02.
  double sq = 0;
  for (std::size_t i = 0; i < tied.size(); ++i) sq += tied[i] * tied[i];
  EXPECT_NEAR(std::sqrt(sq / tied.size()), 0.02, 0.004);
}

TEST(GptModules, UnknownLayerIsAnError) {
  const auto module = MakeModule(SmallGptSpec(false), "block9.attn", 1);
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("block9.attn"), std::string::npos);
}

TEST(GptModules, RejectsArchitecturesTheEngineDoesNotImplement) {
  DecoderSpec mixed = TinyDecoder();  // GPT-style but with RoPE
  mixed.name = "llamaish";
  mixed.learned_positions = false;
  Status status = CheckTrainable(mixed);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "--model llamaish: the real engines (cpu, cuda) train GPT-style decoders (learned "
            "positions, LayerNorm with biases, GELU MLP) and Llama-style ones (rotary positions "
            "(RoPE), RMSNorm without biases, SwiGLU MLP); this model mixes them: rotary positions "
            "(RoPE), LayerNorm with biases, GELU MLP");
  DecoderSpec gqa = TinyDecoder();
  gqa.kv_heads = 2;
  status = CheckTrainable(gqa);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("kv_heads 2, heads 4"), std::string::npos) << status.message();
  DecoderSpec odd = *FindDecoderPreset("tiny-llama");
  odd.hidden = 12;
  odd.heads = 4;  // heads of width 3: RoPE needs pairs
  odd.kv_heads = 4;
  status = CheckTrainable(odd);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("hidden/heads = 3"), std::string::npos) << status.message();
  EXPECT_TRUE(CheckTrainable(TinyDecoder()).ok());
}

// Llama-style decoders train: RoPE, RMSNorm without biases, SwiGLU, grouped-query attention.
TEST(LlamaModules, CheckTrainableAcceptsLlamaStyleDecoders) {
  for (const char* name :
       {"tiny-llama", "tiny-llama-tied", "llama2-7b", "llama3-8b", "llama3.2-1b"}) {
    EXPECT_TRUE(CheckTrainable(*FindDecoderPreset(name)).ok()) << name;
  }
}

// A RoPE model's max_positions is its context: the default --seq-len and its bound; a RoPE model
// with none (llama2-7b) needs --seq-len.
TEST(LlamaModules, PlanTakesTheSequenceLengthFromTheContextOrSeqLen) {
  TrainOptions options;
  options.model = "tiny-llama";
  options.p = 2;
  Result<TrainPlan> plan = PlanTraining(options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->seq_len, 32);
  EXPECT_EQ(plan->spec.kv_heads, 2);
  options.seq_len = 33;
  EXPECT_EQ(PlanTraining(options).status().message(),
            "model 'tiny-llama' has 32 positions: --seq-len 33: must be in [1, 32]");
  options.model = "llama2-7b";
  options.seq_len = 0;
  EXPECT_EQ(PlanTraining(options).status().message(),
            "--seq-len: model 'llama2-7b' uses rotary positions and gives no context length "
            "(max_positions); pass --seq-len");
  options.seq_len = 16;
  plan = PlanTraining(options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->seq_len, 16);
}

}  // namespace
}  // namespace pipette::cpu
