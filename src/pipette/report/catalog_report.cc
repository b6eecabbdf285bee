#include "pipette/report/catalog_report.h"

#include <fmt/core.h>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/model/model_registry.h"

namespace pipette {
namespace {

// TFLOP/s of `dtype` on the cluster's GPU, 0 when it lists none.
double PeakTflops(const ClusterSpec& c, DType dtype) {
  const auto peak = c.gpu.peak_flops.find(dtype);
  return peak == c.gpu.peak_flops.end() ? 0.0 : peak->second / 1e12;
}

// "1:1", "2:1", "2:1/1.5:1" (bottom tier first).
std::string RatiosOf(const ClusterSpec& c) {
  if (c.topology == Topology::kSingleSwitch) return "1:1";
  std::string ratios;
  for (const double r : c.fabric.oversubscription) {
    ratios += fmt::format("{}{:g}:1", ratios.empty() ? "" : "/", r);
  }
  return ratios;
}

// The fabric of every preset scaled to `nodes` nodes: its kind, tiers and closed forms
// (SummarizeFabric).
void AddFabrics(std::string& out, int nodes) {
  out += fmt::format(
      "\n# fabric at {} nodes (--nodes): leaves, spines (switches above the leaves) and "
      "bisection bandwidth per direction, closed forms (docs/clusters.md)\n",
      nodes);
  out += fmt::format("# {:<18} {:<15} {:>6} {:>10} {:>5} {:>10} {:>7} {:>7} {:>12} {:>12}\n",
                     "name", "fabric", "levels", "nodes/leaf", "radix", "oversub", "leaves",
                     "spines", "bisection", "injection");
  out += fmt::format("# {:<18} {:<15} {:>6} {:>10} {:>5} {:>10} {:>7} {:>7} {:>12} {:>12}\n", "-",
                     "-", "-", "-", "-", "-", "-", "-", "[GB/s]", "[GB/s]");
  for (ClusterSpec c : ClusterPresets()) {
    c.nodes = nodes;
    const FabricSummary s = SummarizeFabric(c);
    const bool tree = c.topology != Topology::kSingleSwitch;
    out +=
        fmt::format("  {:<18} {:<15} {:>6} {:>10} {:>5} {:>10} {:>7} {:>7} {:>12.0f} {:>12.0f}\n",
                    c.name, TopologyName(c.topology), tree ? c.fabric.levels : 1,
                    tree ? std::to_string(c.fabric.nodes_per_leaf) : "-",
                    tree ? std::to_string(c.fabric.radix) : "-", RatiosOf(c), s.leaves, s.spines,
                    s.bisection / 1e9, s.injection / 1e9);
  }
}

}  // namespace

std::string ModelCatalogText() {
  std::string out;
  // "-" for a count nobody published.
  const auto published = [](std::int64_t n) { return n > 0 ? std::to_string(n) : "-"; };
  out += fmt::format("# {:<16} {:<10} {:>14} {:>14} {:>14} {:>14} {:>7}  {}\n", "name", "kind",
                     "params", "published", "activated", "published_act", "experts", "source");
  for (const ModelListing& m : ListModels()) {
    out += fmt::format("  {:<16} {:<10} {:>14} {:>14} {:>14} {:>14} {:>7}  {}\n", m.name, m.kind,
                       m.params, published(m.published_params), m.activated_params,
                       published(m.published_activated_params), m.experts, m.source);
  }
  return out;
}

std::string ClusterCatalogText(int nodes) {
  std::string out;
  out +=
      fmt::format("# {:<18} {:>9}  {:<20} {:>10} {:>10} {:>8} {:>9} {:>10} {:>10}  {}\n", "name",
                  "gpus/node", "gpu", "bf16", "fp32", "memory", "hbm", "intra", "inter", "source");
  out += fmt::format("# {:<18} {:>9}  {:<20} {:>10} {:>10} {:>8} {:>9} {:>10} {:>10}\n", "-", "-",
                     "-", "[TFLOP/s]", "[TFLOP/s]", "[GB]", "[TB/s]", "[GB/s]", "[GB/s]");
  for (const ClusterSpec& c : ClusterPresets()) {
    out += fmt::format(
        "  {:<18} {:>9}  {:<20} {:>10.1f} {:>10.3f} {:>8.1f} {:>9.3f} {:>10.1f} {:>10.1f}  {}\n",
        c.name, c.gpus_per_node, c.gpu.name, PeakTflops(c, DType::kBF16),
        PeakTflops(c, DType::kFP32), c.gpu.memory_bytes / 1e9, c.gpu.hbm_bandwidth / 1e12,
        c.intra_node.bandwidth / 1e9, c.inter_node.bandwidth / 1e9, c.source);
  }
  AddFabrics(out, nodes);
  return out;
}

}  // namespace pipette
