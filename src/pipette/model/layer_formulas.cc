#include "pipette/model/layer_formulas.h"

#include <fmt/core.h>

#include <cmath>
#include <utility>

namespace pipette {
namespace {

// 2·m·n·k: one GEMM of an (m × k) by a (k × n) matrix.
double Gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

Layer Named(std::string name, std::string type) {
  Layer layer;
  layer.name = std::move(name);
  layer.type = std::move(type);
  return layer;
}

}  // namespace

TokenBatch TokensOf(const Workload& workload, std::int64_t extra_tokens) {
  return TokenBatch{workload.micro_batch_size, workload.seq_len + extra_tokens,
                    BytesOf(workload.dtype)};
}

Status CheckRange(std::string_view context, std::string_view key, std::int64_t value,
                  std::int64_t min, std::int64_t max) {
  const std::string prefix = context.empty() ? "" : fmt::format("{}: ", context);
  if (value < min) {
    return Status::InvalidArgument(
        fmt::format("{}{} = {}: must be >= {}", prefix, key, value, min));
  }
  if (value > max) {
    return Status::InvalidArgument(
        fmt::format("{}{} = {}: more than the limit of {}", prefix, key, value, max));
  }
  return Status::Ok();
}

Status ValidateWorkload(const Workload& workload) {
  PIPETTE_RETURN_IF_ERROR(
      CheckRange("", "micro_batch_size", workload.micro_batch_size, 1, kMaxTokensPerMicrobatch));
  PIPETTE_RETURN_IF_ERROR(CheckRange("", "seq_len", workload.seq_len, 1, kMaxSeqLen));
  const std::int64_t tokens =
      std::int64_t{workload.micro_batch_size} * std::int64_t{workload.seq_len};
  if (tokens > kMaxTokensPerMicrobatch) {
    return Status::InvalidArgument(fmt::format(
        "micro_batch_size = {}, seq_len = {}: {} tokens per microbatch, more than the limit of {}",
        workload.micro_batch_size, workload.seq_len, tokens, kMaxTokensPerMicrobatch));
  }
  return Status::Ok();
}

std::int64_t NormParams(std::int64_t hidden, bool bias) { return bias ? 2 * hidden : hidden; }

namespace {

// The weights of one feed-forward block of width f on hidden size h (an MLP, or one expert):
// 3 matrices with SwiGLU, else 2, and with biases one per matrix output.
std::int64_t FfnParams(std::int64_t h, std::int64_t f, bool gated, bool bias) {
  const std::int64_t matrices = gated ? 3 : 2;
  return matrices * h * f + (bias ? (matrices - 1) * f + h : 0);
}

}  // namespace

Layer EmbeddingLayer(std::string name, std::int64_t vocab, std::int64_t hidden,
                     std::int64_t positions, const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  Layer layer = Named(std::move(name), "embedding");
  layer.shape = {.hidden = hidden, .vocab = vocab, .positions = positions};
  layer.params = (vocab + positions) * hidden;
  // The backward scatters the output gradient into the rows of the ids: it keeps only the ids.
  layer.activation_bytes = kTokenIdBytes * t;
  layer.activation_bytes_recompute = kTokenIdBytes * t;
  layer.wgrad_input_bytes = kTokenIdBytes * t;
  layer.output_bytes = e * t * hidden;
  // Gather the token rows (and the position rows) and write the sum.
  layer.hbm_bytes = kTokenIdBytes * t + e * t * hidden * (positions > 0 ? 3 : 2);
  layer.tp_allreduce_bytes = e * t * hidden;
  return layer;
}

Layer PatchEmbeddingLayer(std::string name, std::int64_t patch_values, std::int64_t hidden,
                          std::int64_t positions, const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  Layer layer = Named(std::move(name), "patch_embedding");
  layer.shape = {.hidden = hidden, .positions = positions, .in = patch_values, .bias = true};
  layer.params = patch_values * hidden + hidden + positions * hidden;
  layer.fwd_flops = Gemm(t, hidden, patch_values);
  layer.igrad_flops = 0;
  layer.wgrad_flops = layer.fwd_flops;
  layer.activation_bytes = e * t * patch_values;
  layer.activation_bytes_recompute = e * t * patch_values;
  layer.wgrad_input_bytes = e * t * patch_values;
  layer.output_bytes = e * t * hidden;
  layer.hbm_bytes = e * (layer.params + t * patch_values + 2 * t * hidden);
  layer.tp_sharded = false;
  return layer;
}

Layer AttentionLayer(std::string name, const AttentionShape& shape, const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  const std::int64_t h = shape.hidden;
  const std::int64_t kv = shape.kv_heads * (h / shape.heads);  // K and V width
  const std::int64_t s = tokens.seq_len;
  const std::int64_t scores = tokens.sequences * shape.heads * s * s;  // b·a·s² elements
  Layer layer = Named(std::move(name), "attention");
  layer.shape = {.hidden = h, .heads = shape.heads, .kv_heads = shape.kv_heads, .bias = shape.bias};
  layer.params = NormParams(h, shape.bias) + 2 * h * h + 2 * h * kv;
  if (shape.bias) layer.params += 2 * h + 2 * kv;

  const double weights = Gemm(t, h + 2 * kv, h) + Gemm(t, h, h);  // QKV and output projections
  const double core = 2 * Gemm(t, s, h);                          // Q·Kᵀ and P·V, all heads
  layer.fwd_flops = weights + core;
  layer.igrad_flops = weights + 2 * core;
  layer.wgrad_flops = weights;

  // Korthikanti et al. §4.1 with GQA: norm input, QKV input, Q, K, V, output-projection input
  // (dtype each), its dropout mask (1 byte); softmax output and dropout output (dtype) and
  // attention dropout mask (1 byte) per score. 13·s·b·h + 5·a·s²·b at 16 bits and kv = h.
  // Llama-style layers (bias = false) train without dropout (Llama 2/3; Megatron's Llama recipes
  // set both dropouts to 0): no masks and no dropout output, which is what the CPU engine keeps
  // (LlamaMemory in tests/cpu/llama_test.cc).
  const std::int64_t dropout = shape.bias ? t * h + (e + 1) * scores : 0;
  layer.activation_bytes = e * t * (4 * h + 2 * kv) + e * scores + dropout;
  layer.activation_bytes_recompute = e * t * h;
  layer.wgrad_input_bytes = 2 * e * t * h;  // inputs of the QKV and output projections
  layer.output_bytes = e * t * h;
  // norm 2, QKV GEMM 1 + (h+2kv), scores (Q, K) + b·a·s², softmax 2·b·a·s², context b·a·s² + V +
  // h, output GEMM 2, residual add 3 (in elements of t·h unless stated).
  layer.hbm_bytes = e * (layer.params + 11 * t * h + 4 * t * kv + 4 * scores);
  layer.tp_allreduce_bytes = e * t * h;
  return layer;
}

Layer MlpLayer(std::string name, const MlpShape& shape, const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  const std::int64_t h = shape.hidden;
  const std::int64_t f = shape.ffn_hidden;
  const std::int64_t matrices = shape.gated ? 3 : 2;
  Layer layer = Named(std::move(name), "mlp");
  layer.shape = {.hidden = h, .ffn_hidden = f, .gated = shape.gated, .bias = shape.bias};
  layer.params = NormParams(h, shape.bias) + FfnParams(h, f, shape.gated, shape.bias);

  layer.fwd_flops = static_cast<double>(matrices) * Gemm(t, f, h);
  layer.igrad_flops = layer.fwd_flops;
  layer.wgrad_flops = layer.fwd_flops;

  // Korthikanti et al. §4.1: norm input, first GEMM input (dtype), then GELU input and second
  // GEMM input (f wide), dropout mask (1 byte): 21·s·b·h at 16 bits and f = 4h. SwiGLU keeps the
  // gate output, the up output and their product: three f-wide tensors. Llama-style layers
  // (bias = false) have no dropout mask (see AttentionLayer).
  layer.activation_bytes = e * t * (2 * h + (matrices == 3 ? 3 : 2) * f) + (shape.bias ? t * h : 0);
  layer.activation_bytes_recompute = e * t * h;
  layer.wgrad_input_bytes = e * t * (h + f);  // input of the first GEMM(s) and of the last
  layer.output_bytes = e * t * h;
  // norm 2·t·h, first GEMM(s) t·h + (matrices−1)·t·f, activation (and gate product) read and
  // write, last GEMM t·f + t·h, residual add 3·t·h.
  layer.hbm_bytes = e * (layer.params + 7 * t * h + (shape.gated ? 6 : 4) * t * f);
  layer.tp_allreduce_bytes = e * t * h;
  return layer;
}

Status CheckMoeShape(std::string_view context, std::string_view key_prefix, const MoeShape& shape) {
  const auto key = [&](std::string_view name) { return fmt::format("{}{}", key_prefix, name); };
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, key("experts"), shape.experts, 1, kMaxExperts));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, key("top_k"), shape.top_k, 1, kMaxExperts));
  if (shape.top_k > shape.experts) {
    return Status::InvalidArgument(
        fmt::format("{}: {} = {}: must be at most {} = {} (a token picks top_k of the experts)",
                    context, key("top_k"), shape.top_k, key("experts"), shape.experts));
  }
  PIPETTE_RETURN_IF_ERROR(
      CheckRange(context, key("shared_experts"), shape.shared_experts, 0, kMaxExperts));
  PIPETTE_RETURN_IF_ERROR(
      CheckRange(context, key("expert_ffn_hidden"), shape.expert_ffn, 1, kMaxDimension));
  if (!(shape.capacity_factor >= 1 && shape.capacity_factor <= kMaxCapacityFactor)) {
    return Status::InvalidArgument(
        fmt::format("{}: {} = {}: must be a number in [1, {:g}] (1: no padding)", context,
                    key("capacity_factor"), shape.capacity_factor, kMaxCapacityFactor));
  }
  return Status::Ok();
}

Layer MoeLayer(std::string name, const MoeShape& shape, const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  const std::int64_t h = shape.hidden;
  const std::int64_t f = shape.expert_ffn;
  const std::int64_t matrices = shape.gated ? 3 : 2;
  const std::int64_t kept = shape.gated ? 3 : 2;  // f-wide tensors kept per row (see MlpLayer)
  // Rows the routed experts process: c x tokens x top_k (padded buffers).
  const auto rows = static_cast<std::int64_t>(
      std::llround(shape.capacity_factor * static_cast<double>(t * shape.top_k)));
  const std::int64_t shared_rows = t * shape.shared_experts;
  Layer layer = Named(std::move(name), "moe");
  layer.shape = {.hidden = h,
                 .ffn_hidden = f,
                 .gated = shape.gated,
                 .bias = shape.bias,
                 .experts = shape.experts,
                 .top_k = shape.top_k,
                 .shared_experts = shape.shared_experts,
                 .capacity_factor = shape.capacity_factor};
  const std::int64_t expert = FfnParams(h, f, shape.gated, shape.bias);
  layer.expert_params = shape.experts * expert;
  layer.activated_expert_params = shape.top_k * expert;
  layer.params = NormParams(h, shape.bias) + h * shape.experts + layer.expert_params +
                 shape.shared_experts * expert;

  // Router logits, the routed rows through their experts, every token through the shared ones.
  layer.fwd_flops = Gemm(t, shape.experts, h) + static_cast<double>(matrices) * Gemm(rows, f, h) +
                    static_cast<double>(matrices) * Gemm(shared_rows, f, h);
  layer.igrad_flops = layer.fwd_flops;
  layer.wgrad_flops = layer.fwd_flops;

  // Norm input and router/shared-expert input (dtype), router probabilities (fp32), per routed
  // row its dispatched input, the f-wide intermediates and its expert output (the combine weights
  // it), per shared row the f-wide intermediates; a dropout mask with biases.
  layer.activation_bytes = e * t * 2 * h + 4 * t * shape.experts + e * rows * (2 * h + kept * f) +
                           e * shared_rows * kept * f + (shape.bias ? t * h : 0);
  layer.activation_bytes_recompute = e * t * h;
  // Inputs of the weight GEMMs: router input, each row's first and last expert GEMM inputs.
  layer.wgrad_input_bytes = e * t * h + e * rows * (h + f) + e * shared_rows * f;
  layer.output_bytes = e * t * h;
  // The activated experts' weights (top_k routed and the shared ones), norm, router, residual as
  // in MlpLayer, the routed rows' intermediates, the dispatch and combine permutations.
  layer.hbm_bytes = e * (NormParams(h, shape.bias) + h * shape.experts +
                         (shape.top_k + shape.shared_experts) * expert + 7 * t * h +
                         (shape.gated ? 6 : 4) * (rows + shared_rows) * f + 4 * rows * h);
  layer.tp_allreduce_bytes = e * t * h;
  layer.alltoall_bytes = e * rows * h;
  return layer;
}

Layer NormLayer(std::string name, std::int64_t hidden, bool bias, const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  Layer layer = Named(std::move(name), "norm");
  layer.shape = {.hidden = hidden, .bias = bias};
  layer.params = NormParams(hidden, bias);
  layer.activation_bytes = e * t * hidden;
  layer.activation_bytes_recompute = e * t * hidden;
  layer.output_bytes = e * t * hidden;
  layer.hbm_bytes = e * (layer.params + 2 * t * hidden);
  layer.tp_sharded = false;
  return layer;
}

Layer HeadLayer(std::string name, std::int64_t hidden, std::int64_t vocab, bool tied,
                const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  Layer layer = Named(std::move(name), "head");
  layer.shape = {.hidden = hidden, .vocab = vocab, .tied = tied};
  layer.params = tied ? 0 : vocab * hidden;
  layer.fwd_flops = Gemm(t, vocab, hidden);
  layer.igrad_flops = layer.fwd_flops;
  layer.wgrad_flops = layer.fwd_flops;
  layer.activation_bytes = e * t * hidden;
  layer.activation_bytes_recompute = e * t * hidden;
  layer.wgrad_input_bytes = e * t * hidden;
  layer.output_bytes = e * t * vocab;
  layer.hbm_bytes = e * (vocab * hidden + t * hidden + t * vocab);  // reads the matrix even if tied
  return layer;
}

Layer LossLayer(std::string name, std::int64_t vocab, const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  Layer layer = Named(std::move(name), "loss");
  layer.shape = {.vocab = vocab};
  // The backward needs the softmax of the logits and the labels.
  layer.activation_bytes = e * t * vocab + kTokenIdBytes * t;
  layer.activation_bytes_recompute = e * t * vocab + kTokenIdBytes * t;
  layer.output_bytes = 4;  // the loss, one fp32 scalar
  layer.hbm_bytes = e * t * vocab + kTokenIdBytes * t;
  layer.tp_sharded = false;
  return layer;
}

Layer LinearLayer(std::string name, std::int64_t in, std::int64_t out, bool bias,
                  const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  Layer layer = Named(std::move(name), "linear");
  layer.shape = {.in = in, .out = out, .bias = bias};
  layer.params = in * out + (bias ? out : 0);
  layer.fwd_flops = Gemm(t, out, in);
  layer.igrad_flops = layer.fwd_flops;
  layer.wgrad_flops = layer.fwd_flops;
  layer.activation_bytes = e * t * in;
  layer.activation_bytes_recompute = e * t * in;
  layer.wgrad_input_bytes = e * t * in;
  layer.output_bytes = e * t * out;
  layer.hbm_bytes = e * (layer.params + t * in + t * out);
  return layer;
}

Layer ProjectorLayer(std::string name, std::int64_t in, std::int64_t out,
                     const TokenBatch& tokens) {
  const std::int64_t t = tokens.tokens();
  const std::int64_t e = tokens.bytes;
  Layer layer = Named(std::move(name), "projector");
  layer.shape = {.in = in, .out = out, .bias = true};
  layer.params = in * out + out + out * out + out;
  layer.fwd_flops = Gemm(t, out, in) + Gemm(t, out, out);
  layer.igrad_flops = layer.fwd_flops;
  layer.wgrad_flops = layer.fwd_flops;
  layer.activation_bytes = e * t * (in + 2 * out);  // input, GELU input, second GEMM input
  layer.activation_bytes_recompute = e * t * in;
  layer.wgrad_input_bytes = e * t * (in + out);
  layer.output_bytes = e * t * out;
  layer.hbm_bytes = e * (layer.params + t * in + 5 * t * out);
  layer.tp_allreduce_bytes = e * t * out;
  return layer;
}

}  // namespace pipette
