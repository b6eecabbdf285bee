// KernelProfile: what a real engine's kernels took while it profiled its run (the CPU engine:
// replica 0, traced steps 1 and later; step 0 is warm-up): each GEMM shape's calls and seconds,
// and the seconds of the activation (GELU, SwiGLU), attention-score (causal softmax and its
// backward) and loss (softmax cross-entropy over the vocabulary) kernels. A fitted cost model
// (fidelity/cost_fit.h) reads it as rows beside the per-stage times: a GEMM's time per shape
// determines the GEMM parameters that one run's stage times alone cannot tell apart. Recorded as
// metrics by store/kernel_metrics.h. Plain values.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace pipette {

// kModule: a whole module pass (a layer's forward, input gradient or weight gradient, every kernel
// inside it), per kind of layer.
enum class KernelKind : std::int32_t { kGemm, kActivation, kScores, kLogits, kModule };

// The kinds of layer a kModule sample times (the decoder's layer names, decoder_layers.h).
enum ModuleKind : std::int32_t {
  kEmbeddingModule,
  kAttentionModule,
  kMlpModule,
  kFinalNormModule,
  kHeadModule,
  kLossModule,
  kModuleKinds
};
std::string_view ModuleKindName(int kind);  // "embedding", "attn", "mlp", "final_norm", ...
int ModuleKindOf(std::string_view layer);   // of a layer name; -1 for none of them

struct KernelSample {  // trivially copyable: ranks gather it as bytes
  KernelKind kind = KernelKind::kGemm;
  // A GEMM's shape; a module pass's ModuleKind (m) and pass (n: 0 F, 1 I, 2 W); 0 otherwise.
  std::int32_t m = 0, n = 0, k = 0;
  std::int64_t calls = 0;
  double seconds = 0;
};

// `samples` with those of one kind and shape summed, GEMMs first in (m, n, k) order.
std::vector<KernelSample> MergeKernelSamples(const std::vector<KernelSample>& samples);

}  // namespace pipette
