// The op inventory (engine/op_inventory.h) against the CPU engine's own modules: every GEMM of
// every pass of every layer, in call order and shape, is the one the engine calls (recorded with
// RecordGemmCalls), for a GPT-style and a Llama-style (grouped-query, SwiGLU, RoPE) decoder.
#include "pipette/engine/op_inventory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../backends/cpu/gpt.h"
#include "../../backends/cpu/tensor.h"
#include "pipette/engine/corpus.h"
#include "pipette/engine/decoder_layers.h"
#include "small_specs.h"

namespace pipette::cpu {
namespace {

std::vector<GemmShape> Shapes(const std::vector<GemmCall>& calls) {
  std::vector<GemmShape> shapes;
  for (const GemmCall& c : calls) shapes.push_back({c.m, c.n, c.k});
  return shapes;
}

// Runs every layer of `spec` forward, input gradient and weight gradient on one microbatch of
// `sequences` x `seq` tokens and checks each pass's GEMMs against LayerOps.
void ExpectInventoryMatchesEngine(const DecoderSpec& spec, int sequences, int seq) {
  const Batch batch = MakeBatch(spec.vocab, 0, sequences, seq, 1.0f);
  const MicrobatchShape mb{sequences, seq};
  Tensor x;  // the previous layer's output
  std::vector<std::unique_ptr<Module>> modules;
  std::vector<Cache> caches;
  const std::vector<std::string> names = LayerNames(spec);
  for (const std::string& name : names) {
    auto module = MakeModule(spec, name, 1);
    ASSERT_TRUE(module.ok()) << module.status().message();
    modules.push_back(std::move(*module));
  }
  caches.resize(modules.size());
  std::vector<GemmCall> calls;
  for (std::size_t l = 0; l < modules.size(); ++l) {
    const auto work = LayerOps(spec, names[l], mb);
    ASSERT_TRUE(work.ok()) << work.status().message();
    RecordGemmCalls(&calls);
    x = modules[l]->Forward(batch, std::move(x), caches[l]);
    RecordGemmCalls(nullptr);
    EXPECT_EQ(Shapes(calls), work->f.gemms) << names[l] << " forward";
    double flops = 0;
    for (const GemmCall& c : calls) flops += c.flops();
    EXPECT_DOUBLE_EQ(flops, work->f.features[kGemmFlops]) << names[l];
    EXPECT_EQ(static_cast<double>(calls.size()), work->f.features[kGemmCalls]) << names[l];
    calls.clear();
  }
  Tensor dy(x.rows(), x.cols());
  for (std::size_t l = modules.size(); l-- > 0;) {
    const auto work = LayerOps(spec, names[l], mb);
    ASSERT_TRUE(work.ok());
    RecordGemmCalls(&calls);
    dy = modules[l]->InputGrad(batch, std::move(dy), caches[l]);
    RecordGemmCalls(nullptr);
    EXPECT_EQ(Shapes(calls), work->i.gemms) << names[l] << " input gradient";
    calls.clear();
    RecordGemmCalls(&calls);
    modules[l]->WeightGrad(batch, caches[l]);
    RecordGemmCalls(nullptr);
    EXPECT_EQ(Shapes(calls), work->w.gemms) << names[l] << " weight gradient";
    calls.clear();
  }
}

TEST(OpInventory, EveryGemmOfAGptDecoderIsTheEnginesCall) {
  ExpectInventoryMatchesEngine(test_specs::SmallGptSpec(false), 3, 8);
  ExpectInventoryMatchesEngine(test_specs::SmallGptSpec(true), 2, 5);
}

TEST(OpInventory, EveryGemmOfALlamaDecoderIsTheEnginesCall) {
  ExpectInventoryMatchesEngine(test_specs::SmallLlamaSpec(false), 2, 8);
}

TEST(OpInventory, CountsFollowTheClosedForms) {
  const DecoderSpec spec = test_specs::SmallGptSpec(false);  // h 16, 2 heads, f 32, vocab 11
  const auto attn = LayerOps(spec, "block0.attn", {2, 8});
  ASSERT_TRUE(attn.ok());
  // Forward GEMM FLOPs: qkv 2*T*3h*h + out 2*T*h*h + per head 2 * 2*s*s*d, T = 16, d = 8.
  EXPECT_DOUBLE_EQ(attn->f.features[kGemmFlops],
                   2.0 * 16 * 48 * 16 + 2.0 * 16 * 16 * 16 + 4 * (2.0 * 8 * 8 * 8) * 2);
  EXPECT_DOUBLE_EQ(attn->f.features[kScores], 4.0 * 8 * 8);  // the softmax, batch x heads x s^2
  EXPECT_DOUBLE_EQ(attn->f.features[kModules], 1);
  const auto loss = LayerOps(spec, "loss", {2, 8});
  ASSERT_TRUE(loss.ok());
  EXPECT_DOUBLE_EQ(loss->f.features[kLogits], 3.0 * 16 * 11);
  EXPECT_DOUBLE_EQ(loss->w.features[kGemmFlops], 0);
  const auto mlp = LayerOps(spec, "block1.mlp", {2, 8});
  ASSERT_TRUE(mlp.ok());
  EXPECT_DOUBLE_EQ(mlp->f.features[kActivation], 16.0 * 32);
  EXPECT_FALSE(LayerOps(spec, "block2.mlp", {2, 8}).ok());  // two blocks only
  DecoderSpec moe = spec;
  moe.experts = 4;
  EXPECT_FALSE(LayerOps(moe, "block0.mlp", {2, 8}).ok());
}

}  // namespace
}  // namespace pipette::cpu
