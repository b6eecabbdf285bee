// Model files: a user's own model as a DAG of typed layers in TOML, built into a ModelGraph with
// the same per-layer formulas as the presets (layer_formulas.h).
//
// Format (docs/models.md has the full reference; tests/data/models/tiny.toml is an example):
//   name = "tiny"                 # optional; default: the file name without .toml
//   [[layer]]                     # one table per layer, in any order that names inputs
//   name = "block0.attn"          # unique
//   type = "attention"            # embedding, attention, mlp, norm, head, loss, linear, custom
//   hidden = 128                  # the shape keys the type needs (below)
//   heads = 4
//   region = "text"               # optional stage region; default "main"
//   inputs = ["embedding"]        # optional; default: the layer before it in the file (none for
//                                 # the first); [] makes a source
// Shape keys (optional ones with their default):
//   embedding: vocab, hidden, positions = 0 (rows of a learned position table)
//   attention: hidden, heads, kv_heads = heads, bias = false
//   mlp:       hidden, ffn_hidden, gated = false, bias = false
//   moe:       hidden, expert_ffn_hidden, experts, top_k, shared_experts = 0,
//              capacity_factor = 1 (in [1, 64]), gated = false, bias = false (a mixture of
//              experts: layer_formulas.h MoeLayer)
//   norm:      hidden, bias = false (LayerNorm with bias, else RMSNorm)
//   head:      hidden, vocab, tied = false
//   loss:      vocab
//   linear:    in, out, bias = false
//   custom:    amounts PER TOKEN (multiplied by micro_batch_size·seq_len) except params:
//              fwd_flops, params, activation_bytes, output_bytes; optional igrad_flops =
//              fwd_flops, wgrad_flops = (params > 0 ? fwd_flops : 0), activation_bytes_recompute =
//              the bytes of its inputs, wgrad_input_bytes = (wgrad_flops > 0 ? the bytes of its
//              inputs : 0), hbm_bytes = params·dtype + inputs + output, tp_allreduce_bytes = 0,
//              tp_sharded = false.
// Every layer processes the workload's micro_batch_size·seq_len tokens; an edge carries its
// producer's output_bytes. Layers are added to the graph in a topological order that keeps the
// file's order where the inputs allow (so ids follow the file for a file written in data-flow
// order). Attributes: blocks = the number of attention layers, experts = the gcd of the moe
// layers' experts, heads and kv_heads = the gcd over them (so a tp that divides them divides every
// layer's), hidden and vocab = those of the first layer that has one.
// Pure functions; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/model/model_graph.h"

namespace pipette {

// Reads and builds the model file at `path`.
// Errors: NotFound for a missing file; IoError when it cannot be read; InvalidArgument for the
// rest, each naming "<path>:<line>", the layer, the key, the value and the rule broken (TOML
// syntax, unknown top-level key, missing or unknown key, wrong type, value out of range, unknown
// type, duplicate name, unknown input, cycle) or the workload key, or the memory reading it would
// take (EstimateModelFileMemory) beyond kMaxModelFileMemory, refused before it is parsed.
Result<ModelGraph> LoadModelToml(const std::string& path, const Workload& workload);

// Bytes reading model file `text` takes (its parsed document, layers and graph), from its text
// before it is parsed, counted from above: 3.4 KB per table ("[[" or "{"), 440 bytes per string
// (names, types, inputs: delimiters / 2) and 75 bytes per other value (commas and equals signs
// beyond the strings). Measured with `pipette partition --pp 8` (docs/models.md, section 6): a
// chain of 262,144 layers 1.11 GB; dense graphs of 2.0, 3.5 and 9.7 million inputs 0.86, 1.40
// and 4.29 GB (about 440 bytes per input, against 6 bytes of text); 16 M numbers in one array
// 1.19 GB (74 bytes each).
double EstimateModelFileMemory(std::string_view text);
inline constexpr double kModelFileBytesPerTable = 3400;
inline constexpr double kModelFileBytesPerString = 440;
inline constexpr double kModelFileBytesPerValue = 75;
inline constexpr double kMaxModelFileMemory = 2e9;

// Builds the model from TOML `text`; `origin` names it in errors (a path, or "<test>") and its
// stem is the model's default name.
Result<ModelGraph> ParseModelToml(std::string_view text, const std::string& origin,
                                  const Workload& workload);

}  // namespace pipette
