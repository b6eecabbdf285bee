// `pipette models` and `pipette clusters [--nodes N]`: the built-in model and cluster presets, and
// each cluster's fabric sized at N nodes (docs/models.md, docs/clusters.md).
#include <fmt/core.h>

#include <string>

#include "cli/commands.h"
#include "pipette/cluster/cluster_presets.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/model/model_registry.h"

namespace pipette::cli {
namespace {

int ListModelsCommand() {
  // "-" for a count nobody published.
  const auto published = [](std::int64_t n) { return n > 0 ? std::to_string(n) : "-"; };
  fmt::print("# {:<16} {:<10} {:>14} {:>14} {:>14} {:>14} {:>7}  {}\n", "name", "kind", "params",
             "published", "activated", "published_act", "experts", "source");
  for (const ModelListing& m : ListModels()) {
    fmt::print("  {:<16} {:<10} {:>14} {:>14} {:>14} {:>14} {:>7}  {}\n", m.name, m.kind, m.params,
               published(m.published_params), m.activated_params,
               published(m.published_activated_params), m.experts, m.source);
  }
  return kExitOk;
}

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
void PrintFabrics(int nodes) {
  fmt::print(
      "\n# fabric at {} nodes (--nodes): leaves, spines (switches above the leaves) and "
      "bisection bandwidth per direction, closed forms (docs/clusters.md)\n",
      nodes);
  fmt::print("# {:<18} {:<15} {:>6} {:>10} {:>5} {:>10} {:>7} {:>7} {:>12} {:>12}\n", "name",
             "fabric", "levels", "nodes/leaf", "radix", "oversub", "leaves", "spines", "bisection",
             "injection");
  fmt::print("# {:<18} {:<15} {:>6} {:>10} {:>5} {:>10} {:>7} {:>7} {:>12} {:>12}\n", "-", "-", "-",
             "-", "-", "-", "-", "-", "[GB/s]", "[GB/s]");
  for (ClusterSpec c : ClusterPresets()) {
    c.nodes = nodes;
    const FabricSummary s = SummarizeFabric(c);
    const bool tree = c.topology != Topology::kSingleSwitch;
    fmt::print("  {:<18} {:<15} {:>6} {:>10} {:>5} {:>10} {:>7} {:>7} {:>12.0f} {:>12.0f}\n",
               c.name, TopologyName(c.topology), tree ? c.fabric.levels : 1,
               tree ? std::to_string(c.fabric.nodes_per_leaf) : "-",
               tree ? std::to_string(c.fabric.radix) : "-", RatiosOf(c), s.leaves, s.spines,
               s.bisection / 1e9, s.injection / 1e9);
  }
}

int ListClustersCommand(int nodes) {
  if (nodes < 1 || nodes > kMaxClusterGpus) {
    return ReportError(
        "clusters", Status::InvalidArgument(
                        fmt::format("--nodes = {}: must be in [1, {}]", nodes, kMaxClusterGpus)));
  }
  fmt::print("# {:<18} {:>9}  {:<20} {:>10} {:>10} {:>8} {:>9} {:>10} {:>10}  {}\n", "name",
             "gpus/node", "gpu", "bf16", "fp32", "memory", "hbm", "intra", "inter", "source");
  fmt::print("# {:<18} {:>9}  {:<20} {:>10} {:>10} {:>8} {:>9} {:>10} {:>10}\n", "-", "-", "-",
             "[TFLOP/s]", "[TFLOP/s]", "[GB]", "[TB/s]", "[GB/s]", "[GB/s]");
  for (const ClusterSpec& c : ClusterPresets()) {
    fmt::print(
        "  {:<18} {:>9}  {:<20} {:>10.1f} {:>10.3f} {:>8.1f} {:>9.3f} {:>10.1f} {:>10.1f}  {}\n",
        c.name, c.gpus_per_node, c.gpu.name, PeakTflops(c, DType::kBF16),
        PeakTflops(c, DType::kFP32), c.gpu.memory_bytes / 1e9, c.gpu.hbm_bandwidth / 1e12,
        c.intra_node.bandwidth / 1e9, c.inter_node.bandwidth / 1e9, c.source);
  }
  PrintFabrics(nodes);
  return kExitOk;
}

}  // namespace

void RegisterCatalogCommands(CLI::App& app, int& exit_code) {
  app.add_subcommand("models", "List the model presets")->callback([&exit_code] {
    exit_code = ListModelsCommand();
  });
  auto nodes = std::make_shared<int>(128);
  CLI::App* clusters = app.add_subcommand("clusters", "List the cluster presets and their fabrics");
  clusters->add_option("--nodes", *nodes, "Nodes to size each preset's fabric at")
      ->capture_default_str();
  clusters->callback([&exit_code, nodes] { exit_code = ListClustersCommand(*nodes); });
}

}  // namespace pipette::cli
