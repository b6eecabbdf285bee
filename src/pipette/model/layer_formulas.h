// Layer formulas: the FLOPs, parameters and bytes of every layer kind pipette models, shared by
// all builders (decoder.h, two_tower.h, model_toml.h) so that a kind costs the same wherever it
// appears. docs/models.md derives each formula.
//
// Rules every function follows:
// - Amounts are for one microbatch of the given TokenBatch and before tensor parallelism (layer.h).
// - FLOPs count GEMMs only, 2·m·n·k each. Elementwise work (norms, softmax, GELU/SiLU, residual
//   adds, embedding gathers, cross-entropy) is memory-bound: it adds nothing to the FLOPs and is
//   accounted for in hbm_bytes instead.
// - The attention score (Q·Kᵀ) and context (P·V) matmuls span the full s×s square: no halving for
//   the causal mask.
// - For a weight GEMM Y = X·W, the input gradient dX = dY·Wᵀ (I) and the weight gradient
//   dW = Xᵀ·dY (W) each cost the forward's FLOPs; the weightless attention matmuls put their whole
//   backward (2× forward) in I. So I + W = 2·F for every layer except the patch embedding, whose
//   input (pixels) needs no gradient.
// - Activation bytes follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
//   Transformer Models", §4.1): activations in the workload's dtype, dropout masks 1 byte per
//   element, the s×s attention matrix materialised (no FlashAttention).
// Pure functions of their arguments. REQUIRES: shapes within the limits below (builders check them
// with CheckRange and ValidateWorkload first), which keep every byte amount below 2^62.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/model/layer.h"
#include "pipette/model/model_graph.h"

namespace pipette {

// Limits on model shapes and workloads.
inline constexpr std::int64_t kMaxDimension = std::int64_t{1} << 20;  // hidden, ffn, vocab, ...
inline constexpr std::int64_t kMaxHeads = 4096;
inline constexpr std::int64_t kMaxLayers = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxTokensPerMicrobatch = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxExperts = 4096;  // routed (and shared) experts per layer
inline constexpr double kMaxCapacityFactor = 64;

// Bytes of one token id (int32) as embeddings and the loss read them.
inline constexpr std::int64_t kTokenIdBytes = 4;

// The tokens one layer processes per microbatch: `sequences` sequences of `seq_len` tokens, whose
// activations take `bytes` bytes per element.
struct TokenBatch {
  std::int64_t sequences = 1;
  std::int64_t seq_len = 1;
  std::int64_t bytes = 2;

  std::int64_t tokens() const { return sequences * seq_len; }
};

// Returns the workload's tokens, each sequence lengthened by `extra_tokens` (a multimodal prefix).
TokenBatch TokensOf(const Workload& workload, std::int64_t extra_tokens = 0);

// Returns OK or InvalidArgument "`context`: `key` = value: must be >= min" (or "more than the
// limit of max"). An empty context drops the prefix.
Status CheckRange(std::string_view context, std::string_view key, std::int64_t value,
                  std::int64_t min, std::int64_t max);

// Returns OK or InvalidArgument naming micro_batch_size or seq_len: each >= 1, seq_len <=
// kMaxSeqLen and micro_batch_size·seq_len <= kMaxTokensPerMicrobatch.
Status ValidateWorkload(const Workload& workload);

// Multi-head attention with grouped-query K/V (kv_heads = heads for plain multi-head attention).
struct AttentionShape {
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  bool bias = false;  // biases on Q, K, V, O; LayerNorm (with bias) instead of RMSNorm
};

// Feed-forward block: 2 matrices and GELU, or with `gated` 3 matrices (SwiGLU).
struct MlpShape {
  std::int64_t hidden = 0;
  std::int64_t ffn_hidden = 0;
  bool gated = false;
  bool bias = false;  // biases on every matrix; LayerNorm (with bias) instead of RMSNorm
};

// A mixture-of-experts feed-forward block (Shazeer et al. 2017; GShard; DeepSeek-V3): a router
// (hidden -> experts logits, no bias) sends each token to its top_k routed experts, each an MLP
// of `expert_ffn` inner width (SwiGLU when `gated`), and every token also passes through the
// shared experts. With a capacity factor c >= 1 every expert's buffer is padded to c times its
// even share of the tokens (c x tokens x top_k rows in all), which the routed GEMMs and the
// all-to-all carry; c = 1 is dropless without padding.
struct MoeShape {
  std::int64_t hidden = 0;
  std::int64_t expert_ffn = 0;
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t shared_experts = 0;
  double capacity_factor = 1;
  bool gated = true;
  bool bias = false;
};

// Returns OK or InvalidArgument "`context`: key = value: rule" for an MoE shape: experts in
// [1, kMaxExperts], top_k in [1, experts], shared_experts in [0, kMaxExperts], expert_ffn in
// [1, kMaxDimension], capacity_factor a number in [1, kMaxCapacityFactor]. (hidden is checked by
// the caller.) `key_prefix` is prepended to every key ("moe_" for a decoder's keys).
Status CheckMoeShape(std::string_view context, std::string_view key_prefix, const MoeShape& shape);

// Parameters of a norm over `hidden`: LayerNorm (scale and bias, 2h) when `bias`, else RMSNorm (h).
std::int64_t NormParams(std::int64_t hidden, bool bias);

// Token embedding (vocab × hidden) plus, when `positions` > 0, a learned position table
// (positions × hidden). A gather: no FLOPs; vocab-parallel under TP (one all-reduce).
Layer EmbeddingLayer(std::string name, std::int64_t vocab, std::int64_t hidden,
                     std::int64_t positions, const TokenBatch& tokens);

// A ViT patch embedding: a linear map of each patch's `patch_values` pixels (channels·patch²) to
// `hidden`, plus a learned position table of `positions` rows. I = 0: pixels need no gradient.
Layer PatchEmbeddingLayer(std::string name, std::int64_t patch_values, std::int64_t hidden,
                          std::int64_t positions, const TokenBatch& tokens);

// Input norm, QKV projection, scores, softmax, context and output projection of one block.
Layer AttentionLayer(std::string name, const AttentionShape& shape, const TokenBatch& tokens);

// Post-attention norm and the feed-forward block.
Layer MlpLayer(std::string name, const MlpShape& shape, const TokenBatch& tokens);

// Post-attention norm and a mixture-of-experts block (type "moe"): FLOPs of the router, the
// top_k routed experts per token (times the capacity factor) and the shared experts; parameters of
// all experts; the all-to-all bytes of one dispatch (layer.h). REQUIRES: CheckMoeShape.
Layer MoeLayer(std::string name, const MoeShape& shape, const TokenBatch& tokens);

// A standalone norm (a decoder's final norm). Replicated under TP.
Layer NormLayer(std::string name, std::int64_t hidden, bool bias, const TokenBatch& tokens);

// The LM head, hidden -> vocab logits. With `tied` the embedding owns the matrix (0 params here)
// but the head still computes with it.
Layer HeadLayer(std::string name, std::int64_t hidden, std::int64_t vocab, bool tied,
                const TokenBatch& tokens);

// Softmax cross-entropy over `vocab` logits. No FLOPs (elementwise); replicated under TP.
Layer LossLayer(std::string name, std::int64_t vocab, const TokenBatch& tokens);

// A plain linear map in -> out.
Layer LinearLayer(std::string name, std::int64_t in, std::int64_t out, bool bias,
                  const TokenBatch& tokens);

// A multimodal projector: the two-layer MLP of LLaVA-1.5, in -> out, GELU, out -> out, with biases.
Layer ProjectorLayer(std::string name, std::int64_t in, std::int64_t out, const TokenBatch& tokens);

}  // namespace pipette
