// The real engines' reading of a model graph: a graph whose layers, in id order, form the decoder
// chain
//   embedding -> (attention, mlp) x L -> norm -> head -> loss
// becomes the DecoderSpec the engines build their modules from. GPT-style: the embedding has a
// learned position table, LayerNorm and biases everywhere, GELU MLPs, one KV head per query head.
// Llama-style: no position table (RoPE), bias = false everywhere (RMSNorm), gated (SwiGLU) MLPs,
// any kv_heads; the spec's max_positions is 0 (a file gives no context length). Every block has
// the same heads, kv_heads and ffn_hidden. The architecture comes from
// the layers' shapes (model/layer.h) in a graph the model layer has already validated, e.g. a
// model file's (model/model_toml.h): nothing is parsed twice. Anything else is refused with the
// layer, its type and why. Pure function.
#pragma once

#include <string>

#include "pipette/common/status.h"
#include "pipette/model/decoder.h"
#include "pipette/model/model_graph.h"

namespace pipette {

// Returns the decoder `graph` describes, named graph.name; `source` (the --model value, a model
// file's path) names it in errors and becomes spec.source. Errors: InvalidArgument naming
// `source`, the layer and why for a structure or shape the engine does not implement, or
// CheckTrainable's.
Result<DecoderSpec> DecoderFromGraph(const ModelGraph& graph, const std::string& source);

}  // namespace pipette
