// Model files the CPU engine can train: a model TOML (model/model_toml.h) whose layers, in file
// order, form a GPT-style decoder chain
//   embedding (with a learned position table) -> (attention, mlp) x L -> norm -> head -> loss
// with LayerNorm and biases everywhere, GELU MLPs of one width and one KV head per query head.
// Such a file becomes a DecoderSpec (named by the file's `name`); anything else is refused with
// the layer, the key and why. Pure function.
#pragma once

#include <string>

#include "pipette/common/status.h"
#include "pipette/model/decoder.h"

namespace pipette::cpu {

// Errors: those of LoadModelToml for a malformed file, InvalidArgument naming the file, the layer
// and the key for a structure or shape the engine does not implement.
Result<DecoderSpec> DecoderFromModelFile(const std::string& path);

}  // namespace pipette::cpu
