#include "pipette/engine/op_inventory.h"

#include <fmt/core.h>

#include <string>

#include "pipette/engine/decoder_layers.h"

namespace pipette {

namespace {

constexpr std::string_view kFeatureNames[kOpFeatures] = {
    "gemm_flops",  "gemm_a",     "gemm_b", "gemm_c", "gemm_calls",
    "elementwise", "activation", "scores", "logits", "modules"};

// Appends `calls` calls of the GEMM m x n x k to `ops`.
void AddGemm(OpCounts& ops, std::int64_t m, std::int64_t n, std::int64_t k,
             std::int64_t calls = 1) {
  const auto md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  ops.features[kGemmFlops] += static_cast<double>(calls) * 2.0 * md * nd * kd;
  ops.features[kGemmA] += static_cast<double>(calls) * md * kd;
  ops.features[kGemmB] += static_cast<double>(calls) * kd * nd;
  ops.features[kGemmC] += static_cast<double>(calls) * md * nd;
  ops.features[kGemmCalls] += static_cast<double>(calls);
  for (std::int64_t c = 0; c < calls; ++c) ops.gemms.push_back({m, n, k});
}

// A decoder's sizes for one microbatch.
struct Sizes {
  double t, h;          // tokens, width
  std::int64_t ti, hi;  // the same as integers, for GEMM shapes
  bool layer_norm;      // LayerNorm with biases (GPT), else RMSNorm (Llama)
};

// The pre-norm of a block half or the final norm: forward (LayerNorm: mean, variance and the
// normalised rows, then the affine; RMSNorm: the sum of squares, then one pass writing xhat and
// y; both allocate xhat and their output), input gradient (two passes), weight gradient (one pass,
// gamma and beta). Added to the three passes' elementwise counts.
void AddNorm(const Sizes& s, LayerWork& work) {
  work.f.features[kElementwise] += (s.layer_norm ? 4 : 2) * s.t * s.h + 2 * s.t * s.h;
  work.i.features[kElementwise] += 2 * s.t * s.h;
  work.w.features[kElementwise] += s.t * s.h;
}

// A block half: y = x + W2 inner(W1 norm(x) + b1) + b2 with `pre` columns after W1 and `act`
// before W2 (backends/cpu/gpt.cc BlockHalf). The inner part is the caller's.
void AddBlockHalf(const DecoderSpec& spec, const Sizes& s, std::int64_t pre, std::int64_t act,
                  LayerWork& work) {
  const double bias = spec.bias ? 1 : 0;
  const auto pred = static_cast<double>(pre), actd = static_cast<double>(act);
  AddNorm(s, work);
  // Forward: W1 (and its bias), W2 (and its bias), the residual; buffers pre, act, y.
  AddGemm(work.f, s.ti, pre, s.hi);
  AddGemm(work.f, s.ti, s.hi, act);
  work.f.features[kElementwise] +=
      bias * s.t * (pred + s.h) + s.t * s.h + s.t * (pred + actd + s.h);
  // Input gradient: through W2 into dact, through W1 into da; the residual's copy of dy; buffers
  // dact, dpre, da.
  AddGemm(work.i, s.ti, act, s.hi);
  AddGemm(work.i, s.ti, s.hi, pre);
  work.i.features[kElementwise] += s.t * s.h + s.t * (actd + pred + s.h);
  // Weight gradient: W2's and W1's, and the biases' column sums.
  AddGemm(work.w, s.hi, act, s.ti);
  AddGemm(work.w, pre, s.hi, s.ti);
  work.w.features[kElementwise] += bias * s.t * (s.h + pred);
}

LayerWork AttentionOps(const DecoderSpec& spec, const Sizes& s, MicrobatchShape mb) {
  LayerWork work;
  const std::int64_t d = spec.hidden / spec.heads;
  const std::int64_t pre = static_cast<std::int64_t>(spec.heads + 2 * spec.kv_heads) * d;
  const std::int64_t heads = static_cast<std::int64_t>(mb.sequences) * spec.heads;
  const double scores = static_cast<double>(heads) * mb.seq * mb.seq;
  AddBlockHalf(spec, s, pre, s.hi, work);
  // The core, per sequence and head: S = Q K^T, P V; backward dP = dO V^T, dV = P^T dO, dQ = dS K,
  // dK = dS^T Q (backends/cpu/tensor.cc AttentionForward, AttentionInputGrad). The forward's W1
  // GEMM comes first and the core sits between the two projections, so its GEMMs are inserted
  // after the first of each pass's list.
  OpCounts core_f, core_i;
  for (std::int64_t j = 0; j < heads; ++j) {
    AddGemm(core_f, mb.seq, mb.seq, d);
    AddGemm(core_f, mb.seq, d, mb.seq);
    AddGemm(core_i, mb.seq, mb.seq, d);
    AddGemm(core_i, mb.seq, d, mb.seq, 3);
  }
  for (int f = 0; f < kGemmCalls + 1; ++f) {
    work.f.features[f] += core_f.features[f];
    work.i.features[f] += core_i.features[f];
  }
  work.f.gemms.insert(work.f.gemms.begin() + 1, core_f.gemms.begin(), core_f.gemms.end());
  work.i.gemms.insert(work.i.gemms.begin() + 1, core_i.gemms.begin(), core_i.gemms.end());
  // The causal softmax and the backward's dS (the kernels a profile times as scores), and the
  // buffers of the probabilities and of dP (elementwise: allocated and zeroed).
  work.f.features[kScores] += scores;
  work.i.features[kScores] += scores;
  work.f.features[kElementwise] += scores;
  work.i.features[kElementwise] += static_cast<double>(mb.seq) * mb.seq;
  if (!spec.learned_positions) {  // RoPE on q and k, forward and inverse
    const double rotated = s.t * static_cast<double>((spec.heads + spec.kv_heads) * d);
    work.f.features[kElementwise] += rotated;
    work.i.features[kElementwise] += rotated;
  }
  return work;
}

LayerWork MlpOps(const DecoderSpec& spec, const Sizes& s) {
  LayerWork work;
  const std::int64_t f = spec.ffn_hidden;
  AddBlockHalf(spec, s, spec.gated_mlp ? 2 * f : f, f, work);
  const double activated = s.t * static_cast<double>(f);
  work.f.features[kActivation] += activated;
  work.i.features[kActivation] += activated;
  return work;
}

LayerWork EdgeOps(const DecoderSpec& spec, const Sizes& s, std::string_view layer) {
  LayerWork work;
  const double vocab = spec.vocab;
  const double positions = spec.learned_positions ? 1 : 0;
  if (layer == "embedding") {  // gather rows (and add positions); W scatters the gradient
    work.f.features[kElementwise] += (2 + positions) * s.t * s.h;
    work.w.features[kElementwise] += (1 + positions) * s.t * s.h;
  } else if (layer == "final_norm") {
    AddNorm(s, work);
    work.i.features[kElementwise] += s.t * s.h;  // dx's buffer
  } else if (layer == "head") {
    AddGemm(work.f, s.ti, spec.vocab, s.hi);
    AddGemm(work.i, s.ti, s.hi, spec.vocab);
    AddGemm(work.w, spec.vocab, s.hi, s.ti);
    work.f.features[kElementwise] += s.t * vocab;  // the logits' buffer
    work.i.features[kElementwise] += s.t * s.h;
  } else {  // loss: max, exp and scale over each row of logits (timed as logits); the gradient's
            // scale, a plain pass
    work.f.features[kLogits] += 3 * s.t * vocab;
    work.i.features[kElementwise] += s.t * vocab;
  }
  return work;
}

}  // namespace

std::string_view OpFeatureName(int feature) { return kFeatureNames[feature]; }

OpCounts& OpCounts::operator+=(const OpCounts& other) {
  for (int f = 0; f < kOpFeatures; ++f) features[f] += other.features[f];
  gemms.insert(gemms.end(), other.gemms.begin(), other.gemms.end());
  return *this;
}

Result<LayerWork> LayerOps(const DecoderSpec& spec, std::string_view layer, MicrobatchShape mb) {
  if (spec.experts > 0) {
    return Status::InvalidArgument(fmt::format(
        "model '{}' has mixture-of-experts blocks: the real engines' operations (and so a fitted "
        "cost model) cover dense decoders only",
        spec.name));
  }
  const Sizes s{static_cast<double>(mb.tokens()), static_cast<double>(spec.hidden), mb.tokens(),
                spec.hidden, spec.bias};
  bool mlp = false;
  const int block = BlockIndex(layer, mlp);
  LayerWork work;
  if (block >= 0 && block < spec.layers) {
    work = mlp ? MlpOps(spec, s) : AttentionOps(spec, s, mb);
  } else if (layer == "embedding" || layer == "final_norm" || layer == "head" || layer == "loss") {
    work = EdgeOps(spec, s, layer);
  } else {
    return Status::InvalidArgument(
        fmt::format("model '{}' has no layer '{}' the real engines build", spec.name, layer));
  }
  work.f.features[kModules] += 1;
  work.i.features[kModules] += 1;
  work.w.features[kModules] += 1;
  return work;
}

}  // namespace pipette
