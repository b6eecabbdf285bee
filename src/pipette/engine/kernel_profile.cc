#include "pipette/engine/kernel_profile.h"

#include <map>
#include <tuple>

#include "pipette/engine/decoder_layers.h"

namespace pipette {

namespace {
constexpr std::string_view kModuleNames[kModuleKinds] = {"embedding",  "attn", "mlp",
                                                         "final_norm", "head", "loss"};
}  // namespace

std::string_view ModuleKindName(int kind) { return kModuleNames[kind]; }

int ModuleKindOf(std::string_view layer) {
  bool mlp = false;
  if (BlockIndex(layer, mlp) >= 0) return mlp ? kMlpModule : kAttentionModule;
  for (int k = 0; k < kModuleKinds; ++k) {
    if (k != kAttentionModule && k != kMlpModule && layer == kModuleNames[k]) return k;
  }
  return -1;
}

std::vector<KernelSample> MergeKernelSamples(const std::vector<KernelSample>& samples) {
  std::map<std::tuple<int, int, int, int>, KernelSample> merged;
  for (const KernelSample& s : samples) {
    KernelSample& into = merged[{static_cast<int>(s.kind), s.m, s.n, s.k}];
    into.kind = s.kind;
    into.m = s.m;
    into.n = s.n;
    into.k = s.k;
    into.calls += s.calls;
    into.seconds += s.seconds;
  }
  std::vector<KernelSample> out;
  for (const auto& [key, sample] : merged) out.push_back(sample);
  return out;
}

}  // namespace pipette
