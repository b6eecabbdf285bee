// The model registry: the one entry point that turns a model name (a preset of model_presets.h)
// or a model file (.toml, model_toml.h) into a ModelGraph, and the listing `pipette models` prints.
// Pure functions over immutable tables; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/model/model_graph.h"

namespace pipette {

// Builds `name_or_file` for `workload`: a path ending in ".toml" is loaded with LoadModelToml, any
// other name must be a decoder or two-tower preset.
// Errors: NotFound for an unknown preset (the message says how to list them) or a missing file;
// InvalidArgument naming the key, value and rule for a bad workload or model file.
Result<ModelGraph> MakeModel(std::string_view name_or_file, const Workload& workload);

struct ModelListing {
  std::string name;
  std::string kind;     // "decoder" or "two-tower"
  std::int64_t params;  // pipette's count (TotalParams of the built graph)
  std::string source;
  std::int64_t published_params = 0;  // the authors' count; 0 if none
  // Parameters one token passes through (ModelGraph::ActivatedParams; = params when dense) and
  // the authors' count of them (0 if none).
  std::int64_t activated_params = 0;
  std::int64_t published_activated_params = 0;
  int experts = 0;  // routed experts per MoE layer; 0: dense
};

// Returns every preset: the decoders, then the two-tower models, each in its table's order.
std::vector<ModelListing> ListModels();

}  // namespace pipette
