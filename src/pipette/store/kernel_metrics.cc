#include "pipette/store/kernel_metrics.h"

#include <fmt/core.h>

#include <cstdio>
#include <map>
#include <string>
#include <tuple>

namespace pipette {

namespace {

constexpr const char* kClassMetrics[] = {"", "kernel_activation_s", "kernel_scores_s",
                                         "kernel_logits_s"};
constexpr std::string_view kGemmSeconds = "kernel_gemm_s[";
constexpr std::string_view kGemmCalls = "kernel_gemm_calls[";
constexpr std::string_view kModuleSeconds = "kernel_module_s[";
constexpr std::string_view kModuleCalls = "kernel_module_calls[";
constexpr const char* kPasses[] = {"F", "I", "W"};

// The shape of "PREFIXMxNxK]", or false.
bool ShapeOf(std::string_view name, std::string_view prefix, std::tuple<int, int, int>& shape) {
  if (!name.starts_with(prefix) || !name.ends_with("]")) return false;
  const std::string inner(name.substr(prefix.size(), name.size() - prefix.size() - 1));
  int m = 0, n = 0, k = 0, used = 0;
  if (std::sscanf(inner.c_str(), "%dx%dx%d%n", &m, &n, &k, &used) != 3 ||
      used != static_cast<int>(inner.size()) || m < 1 || n < 1 || k < 1) {
    return false;
  }
  shape = {m, n, k};
  return true;
}

// The (kind, pass, 0) of "PREFIXKIND.PASS]", or false.
bool ModuleOf(std::string_view name, std::string_view prefix, std::tuple<int, int, int>& key) {
  if (!name.starts_with(prefix) || !name.ends_with("]")) return false;
  const std::string_view inner = name.substr(prefix.size(), name.size() - prefix.size() - 1);
  for (int kind = 0; kind < kModuleKinds; ++kind) {
    for (int pass = 0; pass < 3; ++pass) {
      if (inner == fmt::format("{}.{}", ModuleKindName(kind), kPasses[pass])) {
        key = {kind, pass, 0};
        return true;
      }
    }
  }
  return false;
}

// The sample `row` belongs to in `gemms` or `modules`, with whether it holds seconds (else calls);
// null for another metric.
KernelSample* SampleOf(const MetricRow& row,
                       std::map<std::tuple<int, int, int>, KernelSample>& gemms,
                       std::map<std::tuple<int, int, int>, KernelSample>& modules, bool& seconds) {
  std::tuple<int, int, int> key;
  KernelSample* s = nullptr;
  if ((seconds = ShapeOf(row.name, kGemmSeconds, key)) || ShapeOf(row.name, kGemmCalls, key)) {
    s = &gemms[key];
  } else if ((seconds = ModuleOf(row.name, kModuleSeconds, key)) ||
             ModuleOf(row.name, kModuleCalls, key)) {
    s = &modules[key];
    s->kind = KernelKind::kModule;
  } else {
    return nullptr;
  }
  std::tie(s->m, s->n, s->k) = key;
  return s;
}

}  // namespace

void AddKernelMetrics(const std::vector<KernelSample>& samples, int steps,
                      std::vector<MetricRow>& metrics) {
  if (steps < 1 || samples.empty()) return;
  metrics.push_back({"kernel_profile_steps", static_cast<double>(steps), "steps"});
  for (const KernelSample& s : MergeKernelSamples(samples)) {
    if (s.kind == KernelKind::kGemm) {
      const std::string shape = fmt::format("{}x{}x{}", s.m, s.n, s.k);
      metrics.push_back({fmt::format("kernel_gemm_s[{}]", shape), s.seconds, "s"});
      metrics.push_back(
          {fmt::format("kernel_gemm_calls[{}]", shape), static_cast<double>(s.calls), "count"});
    } else if (s.kind == KernelKind::kModule) {
      if (s.m < 0 || s.m >= kModuleKinds || s.n < 0 || s.n > 2) continue;
      const std::string key = fmt::format("{}.{}", ModuleKindName(s.m), kPasses[s.n]);
      metrics.push_back({fmt::format("kernel_module_s[{}]", key), s.seconds, "s"});
      metrics.push_back(
          {fmt::format("kernel_module_calls[{}]", key), static_cast<double>(s.calls), "count"});
    } else {
      metrics.push_back({kClassMetrics[static_cast<int>(s.kind)], s.seconds, "s"});
    }
  }
}

std::vector<KernelSample> KernelSamplesOf(const RunData& run, int& steps) {
  steps = static_cast<int>(run.Metric("kernel_profile_steps", 0));
  std::vector<KernelSample> out;
  if (steps < 1) return out;
  std::map<std::tuple<int, int, int>, KernelSample> gemms, modules;
  for (const MetricRow& row : run.metrics) {
    bool seconds = false;
    KernelSample* s = SampleOf(row, gemms, modules, seconds);
    if (s == nullptr) continue;
    if (seconds) {
      s->seconds = row.value;
    } else {
      s->calls = static_cast<std::int64_t>(row.value);
    }
  }
  for (const auto* map : {&gemms, &modules}) {
    for (const auto& [key, s] : *map) {
      if (s.calls > 0 && s.seconds > 0) out.push_back(s);
    }
  }
  for (int kind = 1; kind < 4; ++kind) {
    const double seconds = run.Metric(kClassMetrics[kind], -1);
    if (seconds >= 0) out.push_back({static_cast<KernelKind>(kind), 0, 0, 0, 0, seconds});
  }
  return out;
}

}  // namespace pipette
