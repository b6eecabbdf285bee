// The one entry point that turns a cluster name from the command line into a ClusterSpec: a
// built-in preset (cluster_presets.h) or a cluster file (cluster_toml.h), with an optional node
// count. Stateless; safe to call from any thread.
#pragma once

#include <string_view>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/common/status.h"

namespace pipette {

// Returns the cluster `name_or_file` with `nodes` nodes (0 keeps the preset's or file's count).
// A name ending in ".toml" is a cluster file; anything else names a preset.
// Errors: NotFound for an unknown preset (the message lists the presets) or a missing file;
// InvalidArgument naming --nodes for nodes < 0 or more than kMaxClusterGpus GPUs, and whatever
// LoadClusterToml reports for a bad file.
Result<ClusterSpec> MakeCluster(std::string_view name_or_file, int nodes);

}  // namespace pipette
