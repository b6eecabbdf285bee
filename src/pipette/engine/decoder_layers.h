// The layer names under which the real engines (CPU, CUDA) build a decoder's modules, the names
// of the model graph's layers (model/decoder.h): "embedding", "block{i}.attn" and "block{i}.mlp"
// for each block i, "final_norm", "head", "loss". A pipeline stage is a run of them, so these names
// are how an engine finds the module of a planned layer. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/model/decoder.h"

namespace pipette {

// The layer names of `spec` in model order: 2 * spec.layers + 4 of them.
std::vector<std::string> LayerNames(const DecoderSpec& spec);

// Parses a block half's name as LayerNames spells it, "block{i}.attn" or "block{i}.mlp" with i in
// decimal digits (no sign, no leading zero): returns i and sets `mlp` (true for ".mlp"), or returns
// -1 and leaves `mlp` alone for any other name. Whether block i exists is the caller's question
// (i < spec.layers).
int BlockIndex(std::string_view layer, bool& mlp);

}  // namespace pipette
