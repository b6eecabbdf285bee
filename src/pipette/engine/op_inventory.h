// OpInventory: the work one pass of one decoder layer does in the real engines, counted per class
// of operation, the features a fitted cost model (fidelity/cost_fit.h) prices. It mirrors the CPU
// engine's modules (backends/cpu/gpt.cc, tensor.cc) call for call: every GEMM with its shape as
// the engine calls it (tests/cpu/op_inventory_test.cc checks the list against the engine's own
// calls), and the elementwise work as the number of tensor elements each class of loop touches.
//
// Classes (OpFeature): GEMM FLOPs (2mnk), the elements of each GEMM operand (A: mk, B: kn, C: mn;
// packing and memory, which dominate small and skinny GEMMs, and differ by operand), GEMM calls,
// elementwise elements (bias, residual, norms, embedding gathers and scatters, copies, the buffers
// allocated and zeroed), activation elements (GELU, SwiGLU: an exp each), attention score elements
// (the causal softmax and its backward, batch x heads x seq^2), logit elements (the loss's softmax
// cross-entropy over the vocabulary), and module calls (one per layer per pass that runs). The
// activation, score and logit counts are exactly what the CPU engine's kernel profile times under
// those names (engine/kernel_profile.h). Pure functions.
//
// Example:
//   OpCounts f = LayerOps(spec, "block0.attn", {.sequences = 4, .seq = 64}).f;
//   double flops = f.features[OpFeature::kGemmFlops];
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/model/decoder.h"

namespace pipette {

enum OpFeature : int {
  kGemmFlops,
  kGemmA,  // elements of op(A), m x k
  kGemmB,  // elements of op(B), k x n
  kGemmC,  // elements of C, m x n
  kGemmCalls,
  kElementwise,
  kActivation,
  kScores,
  kLogits,
  kModules,
  kOpFeatures
};

// "gemm_flops", "gemm_a", ... (the names fits are stored and printed under).
std::string_view OpFeatureName(int feature);

struct GemmShape {  // op(A) is m x k, op(B) k x n, as Gemm() takes them
  std::int64_t m = 0, n = 0, k = 0;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

struct OpCounts {
  std::array<double, kOpFeatures> features{};
  std::vector<GemmShape> gemms;  // in call order

  OpCounts& operator+=(const OpCounts& other);
};

struct LayerWork {
  OpCounts f, i, w;  // forward, input gradient, weight gradient
};

struct MicrobatchShape {
  int sequences = 1;  // micro-batch size
  int seq = 1;        // tokens per sequence
  std::int64_t tokens() const { return static_cast<std::int64_t>(sequences) * seq; }
};

// The work of `layer` (a name LayerNames(spec) spells) for one microbatch. InvalidArgument naming
// the layer for a name the decoder has not, or an architecture the real engines do not implement
// (mixture of experts).
Result<LayerWork> LayerOps(const DecoderSpec& spec, std::string_view layer, MicrobatchShape mb);

}  // namespace pipette
