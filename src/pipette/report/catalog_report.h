// How the built-in presets read (`pipette models`, `pipette clusters`): one row per model preset
// (kind, parameters against the published count, experts, source), and one row per cluster preset
// (GPU, peak FLOP/s, memory, links) followed by each preset's fabric sized at `nodes` nodes (tiers
// and the closed forms of cluster/fabric: leaves, spines, bisection and injection bandwidth).
#pragma once

#include <string>

namespace pipette {

std::string ModelCatalogText();
// `nodes` in [1, kMaxClusterGpus] (the caller checks it).
std::string ClusterCatalogText(int nodes);

}  // namespace pipette
