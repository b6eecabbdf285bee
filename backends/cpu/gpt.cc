#include "gpt.h"

#include <fmt/format.h>

#include <cmath>

#include "pipette/engine/param_init.h"
#include "pipette/model/model_presets.h"

namespace pipette::cpu {
namespace {

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

// The pre-norm of a block half and the final norm, over tokens x h: LayerNorm with gamma and beta
// (GPT: spec.bias) or RMSNorm with gamma alone (Llama). Forward keeps xhat (the normalised input,
// which gamma's gradient multiplies) and rstd; InputGrad reads both, WeightGrad reads xhat and the
// norm's output gradient. The module holding a Norm owns its parameters and keeps those tensors in
// its cache.
class Norm {
 public:
  Norm() = default;
  // `beta` null: an RMSNorm.
  Norm(Param* gamma, Param* beta) : gamma_(gamma), beta_(beta) {}
  bool layer_norm() const { return beta_ != nullptr; }

  // y = norm(x); allocates xhat (n x h) and rstd (n x 1). y may be x itself: both norms read an
  // element of x before they write it.
  void Forward(const Tensor& x, Tensor& y, Tensor& xhat, Tensor& rstd) const {
    xhat = Tensor(x.rows(), x.cols());
    rstd = Tensor(x.rows(), 1);
    if (layer_norm()) {
      LayerNormForward(x, xhat, rstd);
      Affine(xhat, gamma_->value, beta_->value, y);
    } else {
      RmsNormForward(x, gamma_->value, xhat, rstd, y);
    }
  }
  // dx (+)= the input gradient for the norm's output gradient dy (accumulates when `accumulate`).
  void InputGrad(const Tensor& dy, const Tensor& xhat, const Tensor& rstd, Tensor& dx,
                 bool accumulate) const {
    if (layer_norm()) {
      LayerNormInputGrad(dy, xhat, rstd, gamma_->value, dx, accumulate);
    } else {
      RmsNormInputGrad(dy, xhat, rstd, gamma_->value, dx, accumulate);
    }
  }
  // The gradients of gamma (and beta) += those for dy.
  void WeightGrad(const Tensor& dy, const Tensor& xhat) const {
    if (layer_norm()) {
      AffineWeightGrad(dy, xhat, gamma_->grad, beta_->grad);
    } else {
      RmsNormWeightGrad(dy, xhat, gamma_->grad);
    }
  }

 private:
  Param* gamma_ = nullptr;
  Param* beta_ = nullptr;
};

// What sits between a block half's two projections: attention over the heads, or the MLP's
// activation. `pre` is the first projection's output (tokens x PreCols), `act` the second's input
// (tokens x ActCols); `kept` is what the backward needs besides pre, if anything. The block half
// holds all three in its cache and frees pre and kept once InputGrad has run.
class Inner {
 public:
  virtual ~Inner() = default;
  virtual int PreCols() const = 0;
  virtual int ActCols() const = 0;
  // Allocates and fills act (and kept) from pre, which it may rewrite in place.
  virtual void Forward(const Batch& batch, Tensor& pre, Tensor& kept, Tensor& act) const = 0;
  // dpre = the gradient of pre for dact, from the forward's pre and kept.
  virtual void InputGrad(const Batch& batch, const Tensor& dact, const Tensor& pre,
                         const Tensor& kept, Tensor& dpre) const = 0;
};

// Causal self-attention with grouped-query heads (kv_heads = heads in a GPT); pre is qkv (column
// blocks: the q heads, the k heads, the v heads), RoPE-rotated in place in a model without learned
// positions; kept is the softmax probabilities.
class Attention final : public Inner {
 public:
  explicit Attention(const DecoderSpec& spec)
      : h_(spec.hidden),
        heads_(spec.heads),
        kv_heads_(spec.kv_heads),
        rope_(!spec.learned_positions) {}
  int PreCols() const override { return (heads_ + 2 * kv_heads_) * (h_ / heads_); }
  int ActCols() const override { return h_; }
  void Forward(const Batch& batch, Tensor& qkv, Tensor& probs, Tensor& out) const override {
    if (rope_) Rope(qkv, batch.seq, heads_, kv_heads_, false);
    probs = Tensor(batch.sequences * heads_ * batch.seq, batch.seq);
    out = Tensor(qkv.rows(), h_);
    AttentionForward(qkv, batch.sequences, batch.seq, heads_, kv_heads_, probs, out);
  }
  void InputGrad(const Batch& batch, const Tensor& dout, const Tensor& qkv, const Tensor& probs,
                 Tensor& dqkv) const override {
    AttentionInputGrad(dout, qkv, probs, batch.sequences, batch.seq, heads_, kv_heads_, dqkv);
    if (rope_) Rope(dqkv, batch.seq, heads_, kv_heads_, true);  // gradients of the unrotated q, k
  }

 private:
  int h_, heads_, kv_heads_;
  bool rope_;
};

// The MLP's activation: GELU of pre (f columns), or with spec.gated_mlp SwiGLU of pre = [gate | up]
// (2f columns). Keeps nothing besides pre.
class Activation final : public Inner {
 public:
  explicit Activation(const DecoderSpec& spec) : f_(spec.ffn_hidden), gated_(spec.gated_mlp) {}
  int PreCols() const override { return gated_ ? 2 * f_ : f_; }
  int ActCols() const override { return f_; }
  void Forward(const Batch&, Tensor& pre, Tensor&, Tensor& act) const override {
    act = Tensor(pre.rows(), f_);
    if (gated_) {
      SwigluForward(pre, act);
    } else {
      GeluForward(pre, act);
    }
  }
  void InputGrad(const Batch&, const Tensor& dact, const Tensor& pre, const Tensor&,
                 Tensor& dpre) const override {
    if (gated_) {
      SwigluInputGrad(dact, pre, dpre);
    } else {
      GeluInputGrad(dact, pre, dpre);
    }
  }

 private:
  int f_;
  bool gated_;
};

// Slots of a block half's cache.
enum HalfSlot { kXhat, kRstd, kA, kPre, kKept, kAct, kDy, kDpre, kDa, kHalfSlots };

const Tensor* ValueOf(const Param* p) { return p != nullptr ? &p->value : nullptr; }
Tensor* GradOf(Param* p) { return p != nullptr ? &p->grad : nullptr; }

// A pre-norm residual half of a block: y = x + W2 inner(W1 norm(x) + b1) + b2, the biases with
// spec.bias. The attention half's W1 is "qkv", the MLP half's "fc"; W2 is "proj" in both. I frees
// pre and kept (qkv and the probabilities, or the activation's input) and keeps for W the inputs
// of the weight gradients: a, act, dy, dpre, da and the norm's xhat.
class BlockHalf final : public Module {
 public:
  BlockHalf(const DecoderSpec& spec, std::string name, std::uint64_t seed, std::string_view w1,
            std::unique_ptr<Inner> inner)
      : Module(std::move(name)), h_(spec.hidden), inner_(std::move(inner)) {
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    const int pre = inner_->PreCols();
    Param* gamma = &AddParam(spec.bias ? "ln.gamma" : "norm.weight", 1, h_, seed, 0, 1, false);
    norm_ = Norm(gamma, spec.bias ? &AddParam("ln.beta", 1, h_, seed, 0, 0, false) : nullptr);
    w1_ = &AddParam(fmt::format("{}.weight", w1), pre, h_, seed, kInitStd, 0, true);
    if (spec.bias) b1_ = &AddParam(fmt::format("{}.bias", w1), 1, pre, seed, 0, 0, false);
    w2_ = &AddParam("proj.weight", h_, inner_->ActCols(), seed, proj_std, 0, true);
    if (spec.bias) b2_ = &AddParam("proj.bias", 1, h_, seed, 0, 0, false);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch& batch, Tensor x, Cache& cache) override {
    const int n = x.rows();
    std::vector<Tensor>& s = cache.saved;
    s.resize(kHalfSlots);
    s[kA] = Tensor(n, h_);
    norm_.Forward(x, s[kA], s[kXhat], s[kRstd]);
    s[kPre] = Tensor(n, inner_->PreCols());
    LinearForward(s[kA], w1_->value, ValueOf(b1_), s[kPre]);
    inner_->Forward(batch, s[kPre], s[kKept], s[kAct]);
    Tensor y(n, h_);
    LinearForward(s[kAct], w2_->value, ValueOf(b2_), y);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    return y;
  }
  Tensor InputGrad(const Batch& batch, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    const int n = dy.rows();
    Tensor dact(n, inner_->ActCols());
    LinearInputGrad(dy, w2_->value, dact);
    s[kDpre] = Tensor(n, inner_->PreCols());
    inner_->InputGrad(batch, dact, s[kPre], s[kKept], s[kDpre]);
    dact = Tensor();
    s[kPre] = Tensor();
    s[kKept] = Tensor();
    s[kDa] = Tensor(n, h_);
    LinearInputGrad(s[kDpre], w1_->value, s[kDa]);
    Tensor dx = dy.Clone();  // the residual's path; the norm's input gradient adds to it
    norm_.InputGrad(s[kDa], s[kXhat], s[kRstd], dx, true);
    s[kRstd] = Tensor();
    s[kDy] = std::move(dy);
    return dx;
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    LinearWeightGrad(s[kDy], s[kAct], w2_->grad, GradOf(b2_));
    LinearWeightGrad(s[kDpre], s[kA], w1_->grad, GradOf(b1_));
    norm_.WeightGrad(s[kDa], s[kXhat]);
    s.clear();
  }

 private:
  int h_;
  std::unique_ptr<Inner> inner_;
  Norm norm_;
  Param *w1_ = nullptr, *b1_ = nullptr, *w2_ = nullptr, *b2_ = nullptr;
};

// The norm after the last block: final_norm.gamma and .beta (LayerNorm) or final_norm.weight
// (RMSNorm).
class FinalNorm final : public Module {
 public:
  FinalNorm(const DecoderSpec& spec, std::uint64_t seed) : Module("final_norm"), h_(spec.hidden) {
    Param* gamma = &AddParam(spec.bias ? "gamma" : "weight", 1, h_, seed, 0, 1, false);
    norm_ = Norm(gamma, spec.bias ? &AddParam("beta", 1, h_, seed, 0, 0, false) : nullptr);
  }
  int OutputCols() const override { return h_; }
  Tensor Forward(const Batch&, Tensor x, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    s.resize(3);               // xhat, rstd, dy
    if (norm_.layer_norm()) {  // GPT's y takes x's buffer; Llama's a new one
      norm_.Forward(x, x, s[0], s[1]);
      return x;
    }
    Tensor y(x.rows(), h_);
    norm_.Forward(x, y, s[0], s[1]);
    return y;
  }
  Tensor InputGrad(const Batch&, Tensor dy, Cache& cache) override {
    std::vector<Tensor>& s = cache.saved;
    Tensor dx(dy.rows(), h_);
    norm_.InputGrad(dy, s[0], s[1], dx, false);
    s[1] = Tensor();
    s[2] = std::move(dy);
    return dx;
  }
  void WeightGrad(const Batch&, Cache& cache) override {
    norm_.WeightGrad(cache.saved[2], cache.saved[0]);
    cache.saved.clear();
  }

 private:
  int h_;
  Norm norm_;
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
    const KernelTimer timer(KernelKind::kLogits);
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
  const std::string name(layer);
  // One module for the halves of both decoders: the spec picks the norm, the biases, RoPE, the
  // KV heads and the activation (CheckTrainable: GPT-style or Llama-style, never a mix).
  if (block >= 0 && block < spec.layers) {
    if (mlp) {
      return std::unique_ptr<Module>(
          new BlockHalf(spec, name, seed, "fc", std::make_unique<Activation>(spec)));
    }
    return std::unique_ptr<Module>(
        new BlockHalf(spec, name, seed, "qkv", std::make_unique<Attention>(spec)));
  }
  if (layer == "embedding") return std::unique_ptr<Module>(new Embedding(spec, seed));
  if (layer == "final_norm") return std::unique_ptr<Module>(new FinalNorm(spec, seed));
  if (layer == "head") return std::unique_ptr<Module>(new Head(spec, seed));
  if (layer == "loss") return std::unique_ptr<Module>(new Loss(spec));
  return Status::InvalidArgument(
      fmt::format("model '{}' has no layer '{}' the cpu engine can build", spec.name, layer));
}

Tensor ModuleChain::Forward(const Batch& batch, Tensor x, std::vector<Cache>& caches) {
  caches.resize(modules_.size());
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    const KernelTimer timer(modules_[i]->profile_kind(), 0);
    x = modules_[i]->Forward(batch, std::move(x), caches[i]);
  }
  return x;
}

Tensor ModuleChain::InputGrad(const Batch& batch, Tensor dy, std::vector<Cache>& caches) {
  for (std::size_t i = modules_.size(); i-- > 0;) {
    const KernelTimer timer(modules_[i]->profile_kind(), 1);
    dy = modules_[i]->InputGrad(batch, std::move(dy), caches[i]);
  }
  return dy;
}

void ModuleChain::WeightGrad(const Batch& batch, std::vector<Cache>& caches) {
  for (std::size_t i = modules_.size(); i-- > 0;) {
    const KernelTimer timer(modules_[i]->profile_kind(), 2);
    modules_[i]->WeightGrad(batch, caches[i]);
  }
}

std::int64_t ModuleChain::CacheBytes(const std::vector<Cache>& caches) {
  std::int64_t bytes = 0;
  for (const Cache& cache : caches) {
    for (const Tensor& t : cache.saved) bytes += t.bytes();
  }
  return bytes;
}

}  // namespace pipette::cpu
