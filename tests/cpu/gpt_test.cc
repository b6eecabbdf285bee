// The CPU engine's math: every parameter gradient of the GPT modules against central finite
// differences of the loss, the I/W split against the full backward, and initialisation that does
// not depend on how the model is cut.
#include "cpu/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/param_set.h"
#include "pipette/engine/corpus.h"
#include "pipette/engine/train_plan.h"

namespace pipette::cpu {
namespace {

DecoderSpec SmallSpec(bool tied) {
  DecoderSpec spec = TinyDecoder();
  spec.layers = 2;
  spec.hidden = 16;
  spec.heads = 2;
  spec.kv_heads = 2;
  spec.ffn_hidden = 32;
  spec.vocab = 11;
  spec.max_positions = 8;
  spec.tied_embeddings = tied;
  return spec;
}

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
void CheckGradients(bool tied) {
  const DecoderSpec spec = SmallSpec(tied);
  ModuleChain model = WholeModel(spec, 7);
  ParamSet params;
  params.Add(model);
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

TEST(GptGradients, MatchFiniteDifferencesForEveryParameter) { CheckGradients(false); }

TEST(GptGradients, TiedHeadSumsBothUsesOfTheTable) { CheckGradients(true); }

TEST(GptGradients, InputThenWeightEqualsFullBackwardAndFreesTheCache) {
  const DecoderSpec spec = SmallSpec(false);
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

TEST(GptInit, DependsOnSeedAndNameOnly) {
  const DecoderSpec spec = SmallSpec(true);
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
  const auto module = MakeModule(SmallSpec(false), "block9.attn", 1);
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("block9.attn"), std::string::npos);
}

TEST(GptModules, RejectsArchitecturesTheEngineDoesNotImplement) {
  DecoderSpec llama = TinyDecoder();
  llama.name = "llamaish";
  llama.learned_positions = false;
  const Status status = CheckTrainable(llama);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("RoPE"), std::string::npos);
  EXPECT_TRUE(CheckTrainable(TinyDecoder()).ok());
}

}  // namespace
}  // namespace pipette::cpu
