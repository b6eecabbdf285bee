// Layer: one vertex of a model graph, with everything the cost and memory models need.
//
// All amounts are for ONE microbatch of the model's Workload (micro_batch_size sequences of
// seq_len tokens) and for the whole layer, before tensor parallelism: a cost model divides the
// shardable parts by tp. FLOPs count a multiply-add as 2. The shape the amounts come from rides
// along. Plain value types.
#pragma once

#include <cstdint>
#include <string>

namespace pipette {

// The architecture a layer was built with: what an engine that really computes it needs besides
// the amounts (backends/cpu builds its modules from it). 0 and false where the kind has no such
// key (layer_formulas.h lists each kind's keys; custom layers have none).
struct LayerShape {
  std::int64_t hidden = 0;      // model width: embedding, attention, mlp, norm, head
  std::int64_t heads = 0;       // attention: query heads
  std::int64_t kv_heads = 0;    // attention: key/value heads (= heads without grouped-query)
  std::int64_t ffn_hidden = 0;  // mlp: inner width
  std::int64_t vocab = 0;       // embedding, head, loss
  std::int64_t positions = 0;   // embedding: rows of a learned position table (0: none)
  std::int64_t in = 0;          // linear, projector; patch embedding: values per patch
  std::int64_t out = 0;         // linear, projector
  bool gated = false;           // mlp: SwiGLU instead of GELU
  bool bias = false;            // linear biases, and LayerNorm instead of RMSNorm
  bool tied = false;            // head: the embedding owns the matrix
  // moe: routed experts, experts per token, shared experts, and the capacity factor (1: no
  // padding). ffn_hidden is then each expert's inner width.
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t shared_experts = 0;
  double capacity_factor = 0;
};

struct Layer {
  std::string name;             // unique in its graph, e.g. "block3.attn"
  std::string type;             // "embedding", "attention", "mlp", "norm", "head", "loss", ...
  std::string region = "main";  // stage region (a tower of a multimodal model): "vision", "text"

  double fwd_flops = 0;    // forward
  double igrad_flops = 0;  // backward, gradient with respect to the layer input (I)
  double wgrad_flops = 0;  // backward, gradient with respect to the weights (W)

  std::int64_t params = 0;  // parameters owned by this layer (tied weights are counted once)

  // Bytes held from the forward until the backward, without recomputation and with full
  // recomputation (then only the layer's input is kept).
  std::int64_t activation_bytes = 0;
  std::int64_t activation_bytes_recompute = 0;
  // Bytes held from I until W by split-backward schedules (inputs of the weight GEMMs).
  std::int64_t wgrad_input_bytes = 0;

  std::int64_t output_bytes = 0;  // the layer's output: what crosses a stage boundary after it
  std::int64_t hbm_bytes = 0;     // forward HBM traffic (weights + activations read and written)

  // Tensor parallelism: bytes all-reduced across the tp group in the forward (the same again in
  // the input-gradient backward); 0 for layers without TP collectives.
  std::int64_t tp_allreduce_bytes = 0;
  // Whether FLOPs, parameters and activations split over tp ranks (norms are replicated).
  bool tp_sharded = true;

  // Mixture of experts (type "moe", 0 elsewhere). Bytes one GPU sends in ONE all-to-all of the
  // layer, before tensor and expert parallelism: tokens x top_k x hidden x dtype bytes x capacity
  // factor. A forward runs two (dispatch, combine), so does an input-gradient backward (their
  // gradients); a weight-gradient backward none. Of them (ep-1)/ep leave the GPU (cost/
  // collectives.h AllToAllSeconds).
  std::int64_t alltoall_bytes = 0;
  // Of `params`, those of the routed experts: each expert lives on one GPU of its expert-parallel
  // group, so a GPU holds expert_params / ep of them.
  std::int64_t expert_params = 0;
  // Of expert_params, those of the top_k experts one token passes through (the activated ones).
  std::int64_t activated_expert_params = 0;

  LayerShape shape = {};
};

}  // namespace pipette
