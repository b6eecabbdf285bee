// DecoderSpec and BuildDecoder: a GPT- or Llama-style decoder-only transformer as a ModelGraph.
//
// The graph is a chain, in this order (ids 0, 1, ...):
//   embedding -> block0.attn -> block0.mlp -> ... -> block{L-1}.mlp -> final_norm -> head -> loss
// `embedding` holds the token table (and the learned position table of GPT-2/GPT-3); each
// `block{i}.attn` the input norm, QKV, attention and output projection; each `block{i}.mlp` the
// post-attention norm and the MLP; `head` the LM head (0 params when tied to the embedding);
// `loss` the softmax cross-entropy. Every edge carries the producer's output (b·s·h elements,
// head -> loss b·s·vocab). The per-layer formulas live in layer_formulas.h; docs/models.md
// derives them. DecoderSpec is a plain value type; the functions are pure.
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(ModelGraph model,
//                            BuildDecoder(*FindDecoderPreset("llama3-8b"), Workload{1, 8192}));
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pipette/common/status.h"
#include "pipette/model/model_graph.h"

namespace pipette {

struct DecoderSpec {
  std::string name;
  int layers = 0;      // transformer blocks
  int hidden = 0;      // model width h
  int heads = 0;       // query heads
  int kv_heads = 0;    // key/value heads (= heads without grouped-query attention)
  int ffn_hidden = 0;  // MLP inner width
  int vocab = 0;
  bool tied_embeddings = false;       // the LM head reuses the token embedding matrix
  bool gated_mlp = false;             // SwiGLU (3 matrices) instead of GELU (2 matrices)
  bool bias = false;                  // linear biases and LayerNorm (else no biases and RMSNorm)
  std::int64_t published_params = 0;  // the count its authors publish; 0 if none
  std::string source;                 // where the architecture and the count come from
  bool learned_positions = false;     // a learned position table (GPT-2, GPT-3) instead of RoPE
  // Rows of that table (its context length); with RoPE the context length the real engines train
  // at by default (no table), 0 when the model gives none.
  int max_positions = 0;
  // Mixture of experts (docs/models.md): experts = 0 is a dense decoder. Otherwise blocks
  // first_dense_blocks .. layers-1 have an MoE MLP (layer_formulas.h MoeShape: `experts` routed
  // experts of inner width expert_ffn_hidden, top_k of them per token, shared_experts more that
  // every token uses, the capacity factor), gated and biased as the dense MLP; the first
  // first_dense_blocks blocks keep the dense MLP of ffn_hidden (DeepSeek-V3's first_k_dense).
  int experts = 0;
  int top_k = 0;
  int expert_ffn_hidden = 0;
  int shared_experts = 0;
  double capacity_factor = 1;
  int first_dense_blocks = 0;
  std::int64_t published_activated_params = 0;  // MoE: the authors' activated count; 0 if none
};

// Returns OK or InvalidArgument naming the model, the field, its value and the rule: every count
// >= 1 and within the limits of layer_formulas.h; hidden divisible by heads; heads divisible by
// kv_heads; max_positions >= 1 with learned positions; with experts > 0 the MoE keys by
// CheckMoeShape (named moe_experts, moe_top_k, ...) and first_dense_blocks in [0, layers]; with
// experts = 0 no other MoE key set.
// The graph of an MoE decoder has `block{i}.moe` layers (type "moe") in place of `block{i}.mlp`.
Status ValidateDecoderSpec(const DecoderSpec& spec);

// Returns the decoder as a graph for `workload` (its name is spec.name, its layers are in region
// "main"), or the error of ValidateDecoderSpec or ValidateWorkload. The position table has
// max_positions rows whatever the workload's seq_len.
Result<ModelGraph> BuildDecoder(const DecoderSpec& spec, const Workload& workload);

// Where AppendDecoder puts a decoder inside a larger graph (a tower of a multimodal model).
struct DecoderPlacement {
  std::string region = "main";  // region of every layer
  std::string name_prefix;      // prepended to every layer name ("text.")
  // A layer whose output the first block consumes besides the token embedding: prefix_tokens
  // tokens per sequence prepended to the text, so every block, the head and the loss see
  // seq_len + prefix_tokens tokens per sequence.
  std::optional<LayerId> prefix_producer;
  std::int64_t prefix_tokens = 0;
};

// Appends the decoder's layers to `model` in the order above and returns the id of its first
// block. REQUIRES: ValidateDecoderSpec(spec) and ValidateWorkload for seq_len + prefix_tokens.
LayerId AppendDecoder(const DecoderSpec& spec, const Workload& workload,
                      const DecoderPlacement& placement, ModelGraph& model);

}  // namespace pipette
