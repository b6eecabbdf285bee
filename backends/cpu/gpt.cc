#include "gpt.h"

#include <fmt/format.h>

#include <cmath>

#include "pipette/engine/param_init.h"
#include "pipette/model/model_presets.h"

namespace pipette::cpu {
namespace {

// Tokens x h LayerNorm with affine parameters, the first part of attn/mlp halves and final_norm.
struct Norm {
  Param* gamma;
  Param* beta;
};

// Slots of the block halves' caches.
enum AttnSlot {
  kAttnXhat,
  kAttnRstd,
  kAttnA,
  kAttnQkv,
  kAttnProbs,
  kAttnOut,
  kAttnDy,
  kAttnDqkv,
  kAttnDa,
  kAttnSlots
};
enum MlpSlot { kMlpXhat, kMlpRstd, kMlpA, kMlpPre, kMlpAct, kMlpDy, kMlpDpre, kMlpDa, kMlpSlots };

class Embedding final : public Module {
 public:
  Embedding(const DecoderSpec& spec, std::uint64_t seed) : Module("embedding"), h_(spec.hidden) {
    wte_ = &AddParam("wte", spec.vocab, spec.hidden, seed, kInitStd, 0, false);
    // RoPE models (learned_positions false) have no position table.
    if (spec.learned_positions) {
      wpe_ = &AddParam("wpe", spec.max_positions, spec.hidden, seed, kInitStd, 0, false);
    }
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch& batch, Tensor, Cache&) override {
    Tensor y(batch.num_tokens(), h_);
    for (int t = 0; t < batch.num_tokens(); ++t) {
      const float* e = wte_->value.row(batch.tokens[t]);
      float* out = y.row(t);
      std::copy(e, e + h_, out);
      if (wpe_ == nullptr) continue;
      const float* p = wpe_->value.row(t % batch.seq);
      for (int c = 0; c < h_; ++c) out[c] += p[c];
    }
    return y;
  }
  Tensor InputGrad(const Batch&, Tensor dy, Cache& cache) override {
    cache.saved.push_back(std::move(dy));  // W scatters it into the tables
    return Tensor();
  }
  void WeightGrad(const Batch& batch, Cache& cache) override {
    const Tensor& dy = cache.saved.at(0);
    for (int t = 0; t < batch.num_tokens(); ++t) {
      float* e = wte_->grad.row(batch.tokens[t]);
      const float* g = dy.row(t);
      for (int c = 0; c < h_; ++c) e[c] += g[c];
      if (wpe_ == nullptr) continue;
      float* p = wpe_->grad.row(t % batch.seq);
      for (int c = 0; c < h_; ++c) p[c] += g[c];
    }
    cache.saved.clear();
  }

 private:
  int h_;
  Param* wte_;
  Param* wpe_ = nullptr;
};

// Pre-norm residual half of a block: y = x + f(LayerNorm(x)).
class AttentionHalf final : public Module {
 public:
  AttentionHalf(const DecoderSpec& spec, std::string name, std::uint64_t seed)
      : Module(std::move(name)), h_(spec.hidden), heads_(spec.heads) {
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    gamma_ = &AddParam("ln.gamma", 1, h_, seed, 0, 1, false);
    beta_ = &AddParam("ln.beta", 1, h_, seed, 0, 0, false);
    w_qkv_ = &AddParam("qkv.weight", 3 * h_, h_, seed, kInitStd, 0, true);
    b_qkv_ = &AddParam("qkv.bias", 1, 3 * h_, seed, 0, 0, false);
    w_o_ = &AddParam("proj.weight", h_, h_, seed, proj_std, 0, true);
    b_o_ = &AddParam("proj.bias", 1, h_, seed, 0, 0, false);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch& batch, Tensor x, Cache& cache) override {
    const int n = x.rows();
    std::vector<Tensor>& s = cache.saved;
    s.resize(kAttnSlots);
    s[kAttnXhat] = Tensor(n, h_);
    s[kAttnRstd] = Tensor(n, 1);
    LayerNormForward(x, s[kAttnXhat], s[kAttnRstd]);
    s[kAttnA] = Tensor(n, h_);
    Affine(s[kAttnXhat], gamma_->value, beta_->value, s[kAttnA]);
    s[kAttnQkv] = Tensor(n, 3 * h_);
    LinearForward(s[kAttnA], w_qkv_->value, &b_qkv_->value, s[kAttnQkv]);
    s[kAttnProbs] = Tensor(batch.sequences * heads_ * batch.seq, batch.seq);
    s[kAttnOut] = Tensor(n, h_);
    AttentionForward(s[kAttnQkv], batch.sequences, batch.seq, heads_, heads_, s[kAttnProbs],
                     s[kAttnOut]);
    Tensor y(n, h_);
    LinearForward(s[kAttnOut], w_o_->value, &b_o_->value, y);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    return y;
  }
  Tensor InputGrad(const Batch& batch, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    const int n = dy.rows();
    Tensor dout(n, h_);
    LinearInputGrad(dy, w_o_->value, dout);
    s[kAttnDqkv] = Tensor(n, 3 * h_);
    AttentionInputGrad(dout, s[kAttnQkv], s[kAttnProbs], batch.sequences, batch.seq, heads_, heads_,
                       s[kAttnDqkv]);
    s[kAttnQkv] = Tensor();
    s[kAttnProbs] = Tensor();
    s[kAttnDa] = Tensor(n, h_);
    LinearInputGrad(s[kAttnDqkv], w_qkv_->value, s[kAttnDa]);
    // dx = dy (residual) + the LayerNorm's input gradient; dout's buffer becomes dx.
    Tensor& dx = dout;
    std::copy(dy.data(), dy.data() + dy.size(), dx.data());
    LayerNormInputGrad(s[kAttnDa], s[kAttnXhat], s[kAttnRstd], gamma_->value, dx, true);
    s[kAttnRstd] = Tensor();
    s[kAttnDy] = std::move(dy);
    return std::move(dx);
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    LinearWeightGrad(s[kAttnDy], s[kAttnOut], w_o_->grad, &b_o_->grad);
    LinearWeightGrad(s[kAttnDqkv], s[kAttnA], w_qkv_->grad, &b_qkv_->grad);
    AffineWeightGrad(s[kAttnDa], s[kAttnXhat], gamma_->grad, beta_->grad);
    s.clear();
  }

 private:
  int h_, heads_;
  Param *gamma_, *beta_, *w_qkv_, *b_qkv_, *w_o_, *b_o_;
};

class MlpHalf final : public Module {
 public:
  MlpHalf(const DecoderSpec& spec, std::string name, std::uint64_t seed)
      : Module(std::move(name)), h_(spec.hidden), f_(spec.ffn_hidden) {
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    gamma_ = &AddParam("ln.gamma", 1, h_, seed, 0, 1, false);
    beta_ = &AddParam("ln.beta", 1, h_, seed, 0, 0, false);
    w_fc_ = &AddParam("fc.weight", f_, h_, seed, kInitStd, 0, true);
    b_fc_ = &AddParam("fc.bias", 1, f_, seed, 0, 0, false);
    w_proj_ = &AddParam("proj.weight", h_, f_, seed, proj_std, 0, true);
    b_proj_ = &AddParam("proj.bias", 1, h_, seed, 0, 0, false);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch&, Tensor x, Cache& cache) override {
    const int n = x.rows();
    std::vector<Tensor>& s = cache.saved;
    s.resize(kMlpSlots);
    s[kMlpXhat] = Tensor(n, h_);
    s[kMlpRstd] = Tensor(n, 1);
    LayerNormForward(x, s[kMlpXhat], s[kMlpRstd]);
    s[kMlpA] = Tensor(n, h_);
    Affine(s[kMlpXhat], gamma_->value, beta_->value, s[kMlpA]);
    s[kMlpPre] = Tensor(n, f_);
    LinearForward(s[kMlpA], w_fc_->value, &b_fc_->value, s[kMlpPre]);
    s[kMlpAct] = Tensor(n, f_);
    GeluForward(s[kMlpPre], s[kMlpAct]);
    Tensor y(n, h_);
    LinearForward(s[kMlpAct], w_proj_->value, &b_proj_->value, y);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    return y;
  }
  Tensor InputGrad(const Batch&, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    const int n = dy.rows();
    Tensor dact(n, f_);
    LinearInputGrad(dy, w_proj_->value, dact);
    s[kMlpDpre] = Tensor(n, f_);
    GeluInputGrad(dact, s[kMlpPre], s[kMlpDpre]);
    dact = Tensor();
    s[kMlpPre] = Tensor();
    s[kMlpDa] = Tensor(n, h_);
    LinearInputGrad(s[kMlpDpre], w_fc_->value, s[kMlpDa]);
    Tensor dx = dy.Clone();
    LayerNormInputGrad(s[kMlpDa], s[kMlpXhat], s[kMlpRstd], gamma_->value, dx, true);
    s[kMlpRstd] = Tensor();
    s[kMlpDy] = std::move(dy);
    return dx;
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    LinearWeightGrad(s[kMlpDy], s[kMlpAct], w_proj_->grad, &b_proj_->grad);
    LinearWeightGrad(s[kMlpDpre], s[kMlpA], w_fc_->grad, &b_fc_->grad);
    AffineWeightGrad(s[kMlpDa], s[kMlpXhat], gamma_->grad, beta_->grad);
    s.clear();
  }

 private:
  int h_, f_;
  Param *gamma_, *beta_, *w_fc_, *b_fc_, *w_proj_, *b_proj_;
};

class FinalNorm final : public Module {
 public:
  FinalNorm(const DecoderSpec& spec, std::uint64_t seed) : Module("final_norm"), h_(spec.hidden) {
    gamma_ = &AddParam("gamma", 1, h_, seed, 0, 1, false);
    beta_ = &AddParam("beta", 1, h_, seed, 0, 0, false);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch&, Tensor x, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    s.resize(3);  // xhat, rstd, dy
    s[0] = Tensor(x.rows(), h_);
    s[1] = Tensor(x.rows(), 1);
    LayerNormForward(x, s[0], s[1]);
    Affine(s[0], gamma_->value, beta_->value, x);  // x's buffer becomes y
    return x;
  }
  Tensor InputGrad(const Batch&, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    Tensor dx(dy.rows(), h_);
    LayerNormInputGrad(dy, s[0], s[1], gamma_->value, dx, false);
    s[1] = Tensor();
    s[2] = std::move(dy);
    return dx;
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    AffineWeightGrad(cache.saved[2], cache.saved[0], gamma_->grad, beta_->grad);
    cache.saved.clear();
  }

 private:
  int h_;
  Param *gamma_, *beta_;
};

// Llama's pre-norm attention half: y = x + proj(attention(RoPE(qkv(RMSNorm(x))))), grouped-query
// heads, no biases. qkv.weight rows: the q heads, then the k heads, then the v heads.
class LlamaAttentionHalf final : public Module {
 public:
  LlamaAttentionHalf(const DecoderSpec& spec, std::string name, std::uint64_t seed)
      : Module(std::move(name)), h_(spec.hidden), heads_(spec.heads), kv_heads_(spec.kv_heads) {
    const int qkv_rows = (heads_ + 2 * kv_heads_) * (h_ / heads_);
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    gamma_ = &AddParam("norm.weight", 1, h_, seed, 0, 1, false);
    w_qkv_ = &AddParam("qkv.weight", qkv_rows, h_, seed, kInitStd, 0, true);
    w_o_ = &AddParam("proj.weight", h_, h_, seed, proj_std, 0, true);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch& batch, Tensor x, Cache& cache) override {
    const int n = x.rows();
    std::vector<Tensor>& s = cache.saved;
    s.resize(kAttnSlots);
    s[kAttnXhat] = Tensor(n, h_);
    s[kAttnRstd] = Tensor(n, 1);
    s[kAttnA] = Tensor(n, h_);
    RmsNormForward(x, gamma_->value, s[kAttnXhat], s[kAttnRstd], s[kAttnA]);
    s[kAttnQkv] = Tensor(n, w_qkv_->value.rows());
    LinearForward(s[kAttnA], w_qkv_->value, nullptr, s[kAttnQkv]);
    Rope(s[kAttnQkv], batch.seq, heads_, kv_heads_, false);
    s[kAttnProbs] = Tensor(batch.sequences * heads_ * batch.seq, batch.seq);
    s[kAttnOut] = Tensor(n, h_);
    AttentionForward(s[kAttnQkv], batch.sequences, batch.seq, heads_, kv_heads_, s[kAttnProbs],
                     s[kAttnOut]);
    Tensor y(n, h_);
    LinearForward(s[kAttnOut], w_o_->value, nullptr, y);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    return y;
  }
  Tensor InputGrad(const Batch& batch, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    const int n = dy.rows();
    Tensor dout(n, h_);
    LinearInputGrad(dy, w_o_->value, dout);
    s[kAttnDqkv] = Tensor(n, w_qkv_->value.rows());
    AttentionInputGrad(dout, s[kAttnQkv], s[kAttnProbs], batch.sequences, batch.seq, heads_,
                       kv_heads_, s[kAttnDqkv]);
    Rope(s[kAttnDqkv], batch.seq, heads_, kv_heads_, true);  // gradients of the unrotated q, k
    s[kAttnQkv] = Tensor();
    s[kAttnProbs] = Tensor();
    s[kAttnDa] = Tensor(n, h_);
    LinearInputGrad(s[kAttnDqkv], w_qkv_->value, s[kAttnDa]);
    Tensor& dx = dout;  // dx = dy (residual) + the RMSNorm's input gradient
    std::copy(dy.data(), dy.data() + dy.size(), dx.data());
    RmsNormInputGrad(s[kAttnDa], s[kAttnXhat], s[kAttnRstd], gamma_->value, dx, true);
    s[kAttnRstd] = Tensor();
    s[kAttnDy] = std::move(dy);
    return std::move(dx);
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    LinearWeightGrad(s[kAttnDy], s[kAttnOut], w_o_->grad, nullptr);
    LinearWeightGrad(s[kAttnDqkv], s[kAttnA], w_qkv_->grad, nullptr);
    RmsNormWeightGrad(s[kAttnDa], s[kAttnXhat], gamma_->grad);
    s.clear();
  }

 private:
  int h_, heads_, kv_heads_;
  Param *gamma_, *w_qkv_, *w_o_;
};

// Llama's pre-norm SwiGLU half: y = x + proj(silu(gate) * up), [gate; up] = fc(RMSNorm(x)), no
// biases. fc.weight rows 0..f-1 are the gate, f..2f-1 the up projection.
class LlamaMlpHalf final : public Module {
 public:
  LlamaMlpHalf(const DecoderSpec& spec, std::string name, std::uint64_t seed)
      : Module(std::move(name)), h_(spec.hidden), f_(spec.ffn_hidden) {
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    gamma_ = &AddParam("norm.weight", 1, h_, seed, 0, 1, false);
    w_fc_ = &AddParam("fc.weight", 2 * f_, h_, seed, kInitStd, 0, true);
    w_proj_ = &AddParam("proj.weight", h_, f_, seed, proj_std, 0, true);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch&, Tensor x, Cache& cache) override {
    const int n = x.rows();
    std::vector<Tensor>& s = cache.saved;
    s.resize(kMlpSlots);
    s[kMlpXhat] = Tensor(n, h_);
    s[kMlpRstd] = Tensor(n, 1);
    s[kMlpA] = Tensor(n, h_);
    RmsNormForward(x, gamma_->value, s[kMlpXhat], s[kMlpRstd], s[kMlpA]);
    s[kMlpPre] = Tensor(n, 2 * f_);  // [gate | up]
    LinearForward(s[kMlpA], w_fc_->value, nullptr, s[kMlpPre]);
    s[kMlpAct] = Tensor(n, f_);
    SwigluForward(s[kMlpPre], s[kMlpAct]);
    Tensor y(n, h_);
    LinearForward(s[kMlpAct], w_proj_->value, nullptr, y);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    return y;
  }
  Tensor InputGrad(const Batch&, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    const int n = dy.rows();
    Tensor dact(n, f_);
    LinearInputGrad(dy, w_proj_->value, dact);
    s[kMlpDpre] = Tensor(n, 2 * f_);
    SwigluInputGrad(dact, s[kMlpPre], s[kMlpDpre]);
    dact = Tensor();
    s[kMlpPre] = Tensor();
    s[kMlpDa] = Tensor(n, h_);
    LinearInputGrad(s[kMlpDpre], w_fc_->value, s[kMlpDa]);
    Tensor dx = dy.Clone();
    RmsNormInputGrad(s[kMlpDa], s[kMlpXhat], s[kMlpRstd], gamma_->value, dx, true);
    s[kMlpRstd] = Tensor();
    s[kMlpDy] = std::move(dy);
    return dx;
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    LinearWeightGrad(s[kMlpDy], s[kMlpAct], w_proj_->grad, nullptr);
    LinearWeightGrad(s[kMlpDpre], s[kMlpA], w_fc_->grad, nullptr);
    RmsNormWeightGrad(s[kMlpDa], s[kMlpXhat], gamma_->grad);
    s.clear();
  }

 private:
  int h_, f_;
  Param *gamma_, *w_fc_, *w_proj_;
};

// Llama's final RMSNorm (final_norm.weight).
class FinalRmsNorm final : public Module {
 public:
  FinalRmsNorm(const DecoderSpec& spec, std::uint64_t seed)
      : Module("final_norm"), h_(spec.hidden) {
    gamma_ = &AddParam("weight", 1, h_, seed, 0, 1, false);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch&, Tensor x, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    s.resize(3);  // xhat, rstd, dy
    s[0] = Tensor(x.rows(), h_);
    s[1] = Tensor(x.rows(), 1);
    Tensor y(x.rows(), h_);
    RmsNormForward(x, gamma_->value, s[0], s[1], y);
    return y;
  }
  Tensor InputGrad(const Batch&, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    Tensor dx(dy.rows(), h_);
    RmsNormInputGrad(dy, s[0], s[1], gamma_->value, dx, false);
    s[1] = Tensor();
    s[2] = std::move(dy);
    return dx;
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    RmsNormWeightGrad(cache.saved[2], cache.saved[0], gamma_->grad);
    cache.saved.clear();
  }

 private:
  int h_;
  Param* gamma_;
};

class Head final : public Module {
 public:
  Head(const DecoderSpec& spec, std::uint64_t seed) : Module("head"), vocab_(spec.vocab) {
    // A tied head is a second copy of the embedding's table: same name, so same values.
    w_ = spec.tied_embeddings
             ? &AddParam("", spec.vocab, spec.hidden, seed, kInitStd, 0, false, "embedding.wte")
             : &AddParam("weight", spec.vocab, spec.hidden, seed, kInitStd, 0, true);
  }
  int OutputCols() const override { return vocab_; }
  Tensor Forward(const Batch&, Tensor x, Cache& cache) override {
    Tensor logits(x.rows(), vocab_);
    LinearForward(x, w_->value, nullptr, logits);
    cache.saved.resize(2);  // x, dlogits
    cache.saved[0] = std::move(x);
    return logits;
  }
  Tensor InputGrad(const Batch&, Tensor dy, Cache& cache) override {
    Tensor dx(dy.rows(), w_->value.cols());
    LinearInputGrad(dy, w_->value, dx);
    cache.saved[1] = std::move(dy);
    return dx;
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    LinearWeightGrad(cache.saved[1], cache.saved[0], w_->grad, nullptr);
    cache.saved.clear();
  }

 private:
  int vocab_;
  Param* w_;
};

// Softmax cross-entropy of the logits against the next tokens; the output is the microbatch's
// mean loss (1 x 1). Its backward starts the backward pass.
class Loss final : public Module {
 public:
  explicit Loss(const DecoderSpec& spec) : Module("loss"), vocab_(spec.vocab) {}
  int OutputCols() const override { return 1; }
  Tensor Forward(const Batch& batch, Tensor logits, Cache& cache) override {
    double total = 0;
    for (int t = 0; t < logits.rows(); ++t) {  // logits become probabilities in place
      float* z = logits.row(t);
      const float mx = *std::max_element(z, z + vocab_);
      double sum = 0;
      for (int c = 0; c < vocab_; ++c) sum += (z[c] = std::exp(z[c] - mx));
      const float inv = static_cast<float>(1.0 / sum);
      for (int c = 0; c < vocab_; ++c) z[c] *= inv;
      total -= std::log(std::max(static_cast<double>(z[batch.targets[t]]), 1e-30));
    }
    cache.loss = static_cast<float>(total / logits.rows());
    cache.saved.push_back(std::move(logits));
    Tensor out(1, 1);
    out[0] = cache.loss;
    return out;
  }
  Tensor InputGrad(const Batch& batch, Tensor, Cache& cache) override {
    Tensor dlogits = std::move(cache.saved.at(0));
    cache.saved.clear();
    for (int t = 0; t < dlogits.rows(); ++t) {
      float* g = dlogits.row(t);
      g[batch.targets[t]] -= 1.0f;
      for (int c = 0; c < vocab_; ++c) g[c] *= batch.loss_scale;
    }
    return dlogits;
  }
  void WeightGrad(const Batch&, Cache&) override {}

 private:
  int vocab_;
};

}  // namespace

DecoderSpec TinyDecoder() { return *FindDecoderPreset("tiny"); }

Param& Module::AddParam(std::string_view param, int rows, int cols, std::uint64_t seed,
                        float stddev, float fill, bool decay, std::string_view full_name) {
  Param p;
  p.name = full_name.empty() ? fmt::format("{}.{}", name_, param) : std::string(full_name);
  p.value = Tensor(rows, cols);
  p.grad = Tensor(rows, cols);
  p.decay = decay;
  InitParamValues(seed, p.name, stddev, fill, p.value.data(), p.value.size());
  params_.push_back(std::move(p));
  return params_.back();
}

Result<std::unique_ptr<Module>> MakeModule(const DecoderSpec& spec, std::string_view layer,
                                           std::uint64_t seed) {
  bool mlp = false;
  const int block = BlockIndex(layer, mlp);
  // A Llama-style spec (CheckTrainable: RMSNorm without biases, RoPE, SwiGLU, GQA) gets the
  // Llama modules; the embedding, head and loss are the same for both.
  const bool llama = !spec.bias;
  const std::string name(layer);
  if (block >= 0 && block < spec.layers) {
    if (mlp) {
      return llama ? std::unique_ptr<Module>(new LlamaMlpHalf(spec, name, seed))
                   : std::unique_ptr<Module>(new MlpHalf(spec, name, seed));
    }
    return llama ? std::unique_ptr<Module>(new LlamaAttentionHalf(spec, name, seed))
                 : std::unique_ptr<Module>(new AttentionHalf(spec, name, seed));
  }
  if (layer == "embedding") return std::unique_ptr<Module>(new Embedding(spec, seed));
  if (layer == "final_norm") {
    return llama ? std::unique_ptr<Module>(new FinalRmsNorm(spec, seed))
                 : std::unique_ptr<Module>(new FinalNorm(spec, seed));
  }
  if (layer == "head") return std::unique_ptr<Module>(new Head(spec, seed));
  if (layer == "loss") return std::unique_ptr<Module>(new Loss(spec));
  return Status::InvalidArgument(
      fmt::format("model '{}' has no layer '{}' the cpu engine can build", spec.name, layer));
}

Tensor ModuleChain::Forward(const Batch& batch, Tensor x, std::vector<Cache>& caches) {
  caches.resize(modules_.size());
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    x = modules_[i]->Forward(batch, std::move(x), caches[i]);
  }
  return x;
}

Tensor ModuleChain::InputGrad(const Batch& batch, Tensor dy, std::vector<Cache>& caches) {
  for (std::size_t i = modules_.size(); i-- > 0;) {
    dy = modules_[i]->InputGrad(batch, std::move(dy), caches[i]);
  }
  return dy;
}

void ModuleChain::WeightGrad(const Batch& batch, std::vector<Cache>& caches) {
  for (std::size_t i = modules_.size(); i-- > 0;) modules_[i]->WeightGrad(batch, caches[i]);
}

std::int64_t ModuleChain::CacheBytes(const std::vector<Cache>& caches) {
  std::int64_t bytes = 0;
  for (const Cache& cache : caches) {
    for (const Tensor& t : cache.saved) bytes += t.bytes();
  }
  return bytes;
}

}  // namespace pipette::cpu
