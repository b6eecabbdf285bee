// `pipette models` and `pipette clusters [--nodes N]`: the built-in model and cluster presets, and
// each cluster's fabric sized at N nodes (docs/models.md, docs/clusters.md).
#include <fmt/core.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "pipette/cluster/cluster_registry.h"
#include "pipette/report/catalog_report.h"

namespace pipette::cli {

void RegisterCatalogCommands(CLI::App& app, int& exit_code) {
  app.add_subcommand("models", "List the model presets")->callback([&exit_code] {
    std::cout << ModelCatalogText();
    exit_code = kExitOk;
  });
  auto nodes = std::make_shared<int>(128);
  CLI::App* clusters = app.add_subcommand("clusters", "List the cluster presets and their fabrics");
  clusters->add_option("--nodes", *nodes, "Nodes to size each preset's fabric at")
      ->capture_default_str()
      ->check(InRange(1, kMaxClusterGpus));
  clusters->callback([&exit_code, nodes] {
    std::cout << ClusterCatalogText(*nodes);
    exit_code = kExitOk;
  });
}

}  // namespace pipette::cli
