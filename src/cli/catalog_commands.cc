// `pipette models` and `pipette clusters [--nodes N]`: the built-in model and cluster presets, and
// each cluster's fabric sized at N nodes (docs/models.md, docs/clusters.md).
#include <fmt/core.h>

#include <iostream>

#include "cli/commands.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/report/catalog_report.h"

namespace pipette::cli {
namespace {

int ListClustersCommand(int nodes) {
  if (nodes < 1 || nodes > kMaxClusterGpus) {
    return ReportError(
        "clusters", Status::InvalidArgument(
                        fmt::format("--nodes = {}: must be in [1, {}]", nodes, kMaxClusterGpus)));
  }
  std::cout << ClusterCatalogText(nodes);
  return kExitOk;
}

}  // namespace

void RegisterCatalogCommands(CLI::App& app, int& exit_code) {
  app.add_subcommand("models", "List the model presets")->callback([&exit_code] {
    std::cout << ModelCatalogText();
    exit_code = kExitOk;
  });
  auto nodes = std::make_shared<int>(128);
  CLI::App* clusters = app.add_subcommand("clusters", "List the cluster presets and their fabrics");
  clusters->add_option("--nodes", *nodes, "Nodes to size each preset's fabric at")
      ->capture_default_str();
  clusters->callback([&exit_code, nodes] { exit_code = ListClustersCommand(*nodes); });
}

}  // namespace pipette::cli
