#include "model.h"

#include <fmt/format.h>

#include <cmath>

#include "check.h"
#include "kernels.h"
#include "pipette/engine/decoder_layers.h"
#include "pipette/engine/param_init.h"

namespace pipette::cuda {
namespace {

constexpr float kRopeTheta = 10000.0f;

// The pre-norm of a block half or the final norm: LayerNorm with gamma and beta (GPT, spec.bias)
// or RMSNorm with gamma (Llama). Forward keeps `kept` (LayerNorm: xhat; RMSNorm: the input x) and
// rstd; the input gradient reads both; the weight gradient reads them and the norm's output
// gradient.
class Norm {
 public:
  Norm(bool layer_norm, DeviceParam* gamma, DeviceParam* beta)
      : layer_norm_(layer_norm), gamma_(gamma), beta_(beta) {}

  // y = norm(x); sets kept and rstd.
  void Forward(RankDevice& dev, const DeviceTensor& x, DeviceTensor& y, DeviceTensor& kept,
               DeviceTensor& rstd) const {
    const int n = x.rows(), h = x.cols();
    rstd = dev.Tensor(n, 1);
    if (layer_norm_) {
      kept = dev.Tensor(n, h);
      kernels::LayerNormForward(x.data(), n, h, kept.data(), rstd.data(), dev.stream());
      kernels::Affine(kept.data(), gamma_->value.data(), beta_->value.data(), n, h, y.data(),
                      dev.stream());
    } else {
      kept = dev.Clone(x);
      kernels::RmsNormForward(x.data(), gamma_->value.data(), n, h, y.data(), rstd.data(),
                              dev.stream());
    }
  }
  // dx (+)= the norm's input gradient for dy.
  void InputGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& kept,
                 const DeviceTensor& rstd, DeviceTensor& dx, bool accumulate) const {
    const int n = dy.rows(), h = dy.cols();
    if (layer_norm_) {
      kernels::LayerNormInputGrad(dy.data(), kept.data(), rstd.data(), gamma_->value.data(), n, h,
                                  dx.data(), accumulate, dev.stream());
    } else {
      kernels::RmsNormInputGrad(dy.data(), kept.data(), rstd.data(), gamma_->value.data(), n, h,
                                dx.data(), accumulate, dev.stream());
    }
  }
  void WeightGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& kept,
                  const DeviceTensor& rstd) const {
    const int n = dy.rows(), h = dy.cols();
    if (layer_norm_) {
      kernels::AffineWeightGrad(dy.data(), kept.data(), n, h, gamma_->grad.data(),
                                beta_->grad.data(), dev.stream());
    } else {
      kernels::RmsNormWeightGrad(dy.data(), kept.data(), rstd.data(), n, h, gamma_->grad.data(),
                                 dev.stream());
    }
  }

 private:
  bool layer_norm_;
  DeviceParam* gamma_;
  DeviceParam* beta_;
};

// dx = dy + the norm's input gradient for dnorm: the residual's two paths.
DeviceTensor ResidualInputGrad(RankDevice& dev, const Norm& norm, const DeviceTensor& dy,
                               const DeviceTensor& dnorm, const DeviceTensor& kept,
                               const DeviceTensor& rstd) {
  DeviceTensor dx = dev.Clone(dy);
  norm.InputGrad(dev, dnorm, kept, rstd, dx, true);
  return dx;
}

class Embedding final : public DeviceModule {
 public:
  Embedding(const DecoderSpec& spec, std::uint64_t seed, RankDevice& dev)
      : DeviceModule("embedding", dev), h_(spec.hidden) {
    wte_ = &AddParam("wte", spec.vocab, spec.hidden, seed, kInitStd, 0, false);
    if (spec.learned_positions) {
      wpe_ = &AddParam("wpe", spec.max_positions, spec.hidden, seed, kInitStd, 0, false);
    }
  }
  int OutputCols() const override { return h_; }
  DeviceTensor Forward(const DeviceBatch& batch, DeviceTensor, DeviceCache&) override {
    DeviceTensor y = dev().Tensor(batch.num_tokens(), h_);
    kernels::EmbeddingForward(batch.tokens, wte_->value.data(),
                              wpe_ != nullptr ? wpe_->value.data() : nullptr, batch.host->sequences,
                              batch.host->seq, h_, y.data(), dev().stream());
    return y;
  }
  DeviceTensor InputGrad(const DeviceBatch&, DeviceTensor dy, DeviceCache& cache) override {
    cache.saved.push_back(std::move(dy));  // W scatters it into the tables
    return DeviceTensor();
  }
  void WeightGrad(const DeviceBatch& batch, DeviceCache& cache) override {
    kernels::EmbeddingWeightGrad(cache.saved.at(0).data(), batch.tokens, batch.host->sequences,
                                 batch.host->seq, h_, wte_->grad.data(),
                                 wpe_ != nullptr ? wpe_->grad.data() : nullptr, dev().stream());
    cache.saved.clear();
  }

 private:
  int h_;
  DeviceParam* wte_ = nullptr;
  DeviceParam* wpe_ = nullptr;
};

enum AttnSlot {
  kAttnKept,
  kAttnRstd,
  kAttnA,
  kAttnQkv,
  kAttnLse,
  kAttnOut,
  kAttnDy,
  kAttnDqkv,
  kAttnDa,
  kAttnSlots
};

// y = x + proj(attention(qkv(norm(x)))): GPT (LayerNorm, biases, learned positions elsewhere) or
// Llama (RMSNorm, no biases, RoPE on q and k, grouped-query attention).
class AttentionHalf final : public DeviceModule {
 public:
  AttentionHalf(const DecoderSpec& spec, std::string name, std::uint64_t seed, RankDevice& dev)
      : DeviceModule(std::move(name), dev),
        h_(spec.hidden),
        bias_(spec.bias),
        rope_(!spec.learned_positions),
        shape_{0, 0, spec.heads, spec.kv_heads, spec.hidden / spec.heads},
        norm_(spec.bias, nullptr, nullptr) {
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    const int qkv = shape_.qkv_cols();
    if (bias_) {
      DeviceParam* gamma = &AddParam("ln.gamma", 1, h_, seed, 0, 1, false);
      DeviceParam* beta = &AddParam("ln.beta", 1, h_, seed, 0, 0, false);
      norm_ = Norm(true, gamma, beta);
    } else {
      norm_ = Norm(false, &AddParam("norm.weight", 1, h_, seed, 0, 1, false), nullptr);
    }
    w_qkv_ = &AddParam("qkv.weight", qkv, h_, seed, kInitStd, 0, true);
    if (bias_) b_qkv_ = &AddParam("qkv.bias", 1, qkv, seed, 0, 0, false);
    w_o_ = &AddParam("proj.weight", h_, h_, seed, proj_std, 0, true);
    if (bias_) b_o_ = &AddParam("proj.bias", 1, h_, seed, 0, 0, false);
  }
  int OutputCols() const override { return h_; }

  DeviceTensor Forward(const DeviceBatch& batch, DeviceTensor x, DeviceCache& cache) override {
    RankDevice& d = dev();
    const int n = x.rows();
    std::vector<DeviceTensor>& s = cache.saved;
    s.resize(kAttnSlots);
    s[kAttnA] = d.Tensor(n, h_);
    norm_.Forward(d, x, s[kAttnA], s[kAttnKept], s[kAttnRstd]);
    s[kAttnQkv] = d.Tensor(n, shape_.qkv_cols());
    LinearForward(d, s[kAttnA], w_qkv_->value, bias_ ? &b_qkv_->value : nullptr, s[kAttnQkv]);
    const kernels::AttentionShape shape = Shape(batch);
    if (rope_) kernels::RopeForward(s[kAttnQkv].data(), shape, kRopeTheta, d.stream());
    s[kAttnOut] = d.Tensor(n, h_);
    s[kAttnLse] = d.Tensor(shape.batch * shape.heads, shape.seq);
    kernels::AttentionForward(s[kAttnQkv].data(), shape, s[kAttnOut].data(), s[kAttnLse].data(),
                              d.stream());
    DeviceTensor y = d.Tensor(n, h_);
    LinearForward(d, s[kAttnOut], w_o_->value, bias_ ? &b_o_->value : nullptr, y);
    kernels::Add(y.data(), x.data(), y.size(), y.data(), d.stream());
    return y;
  }

  DeviceTensor InputGrad(const DeviceBatch& batch, DeviceTensor dy, DeviceCache& cache) override {
    RankDevice& d = dev();
    std::vector<DeviceTensor>& s = cache.saved;
    const int n = dy.rows();
    DeviceTensor dout = d.Tensor(n, h_);
    LinearInputGrad(d, dy, w_o_->value, dout);
    const kernels::AttentionShape shape = Shape(batch);
    s[kAttnDqkv] = d.Tensor(n, shape_.qkv_cols());
    DeviceTensor delta = d.Tensor(shape.batch * shape.heads, shape.seq);
    kernels::AttentionInputGrad(dout.data(), s[kAttnQkv].data(), s[kAttnOut].data(),
                                s[kAttnLse].data(), shape, s[kAttnDqkv].data(), delta.data(),
                                d.stream());
    if (rope_) kernels::RopeInputGrad(s[kAttnDqkv].data(), shape, kRopeTheta, d.stream());
    s[kAttnQkv] = DeviceTensor();
    s[kAttnLse] = DeviceTensor();
    s[kAttnDa] = d.Tensor(n, h_);
    LinearInputGrad(d, s[kAttnDqkv], w_qkv_->value, s[kAttnDa]);
    DeviceTensor dx = ResidualInputGrad(d, norm_, dy, s[kAttnDa], s[kAttnKept], s[kAttnRstd]);
    s[kAttnDy] = std::move(dy);
    return dx;
  }

  void WeightGrad(const DeviceBatch&, DeviceCache& cache) override {
    RankDevice& d = dev();
    std::vector<DeviceTensor>& s = cache.saved;
    LinearWeightGrad(d, s[kAttnDy], s[kAttnOut], w_o_->grad, bias_ ? &b_o_->grad : nullptr);
    LinearWeightGrad(d, s[kAttnDqkv], s[kAttnA], w_qkv_->grad, bias_ ? &b_qkv_->grad : nullptr);
    norm_.WeightGrad(d, s[kAttnDa], s[kAttnKept], s[kAttnRstd]);
    s.clear();
  }

 private:
  kernels::AttentionShape Shape(const DeviceBatch& batch) const {
    kernels::AttentionShape shape = shape_;
    shape.batch = batch.host->sequences;
    shape.seq = batch.host->seq;
    return shape;
  }

  int h_;
  bool bias_, rope_;
  kernels::AttentionShape shape_;
  Norm norm_;
  DeviceParam *w_qkv_ = nullptr, *b_qkv_ = nullptr, *w_o_ = nullptr, *b_o_ = nullptr;
};

enum MlpSlot { kMlpKept, kMlpRstd, kMlpA, kMlpPre, kMlpAct, kMlpDy, kMlpDpre, kMlpDa, kMlpSlots };

// y = x + proj(act(fc(norm(x)))): GELU with biases (GPT) or SwiGLU, fc = [gate | up] (Llama).
class MlpHalf final : public DeviceModule {
 public:
  MlpHalf(const DecoderSpec& spec, std::string name, std::uint64_t seed, RankDevice& dev)
      : DeviceModule(std::move(name), dev),
        h_(spec.hidden),
        f_(spec.ffn_hidden),
        bias_(spec.bias),
        gated_(spec.gated_mlp),
        norm_(spec.bias, nullptr, nullptr) {
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    const int fc_rows = gated_ ? 2 * f_ : f_;
    if (bias_) {
      DeviceParam* gamma = &AddParam("ln.gamma", 1, h_, seed, 0, 1, false);
      DeviceParam* beta = &AddParam("ln.beta", 1, h_, seed, 0, 0, false);
      norm_ = Norm(true, gamma, beta);
    } else {
      norm_ = Norm(false, &AddParam("norm.weight", 1, h_, seed, 0, 1, false), nullptr);
    }
    w_fc_ = &AddParam("fc.weight", fc_rows, h_, seed, kInitStd, 0, true);
    if (bias_) b_fc_ = &AddParam("fc.bias", 1, fc_rows, seed, 0, 0, false);
    w_proj_ = &AddParam("proj.weight", h_, f_, seed, proj_std, 0, true);
    if (bias_) b_proj_ = &AddParam("proj.bias", 1, h_, seed, 0, 0, false);
  }
  int OutputCols() const override { return h_; }

  DeviceTensor Forward(const DeviceBatch&, DeviceTensor x, DeviceCache& cache) override {
    RankDevice& d = dev();
    const int n = x.rows();
    std::vector<DeviceTensor>& s = cache.saved;
    s.resize(kMlpSlots);
    s[kMlpA] = d.Tensor(n, h_);
    norm_.Forward(d, x, s[kMlpA], s[kMlpKept], s[kMlpRstd]);
    s[kMlpPre] = d.Tensor(n, gated_ ? 2 * f_ : f_);
    LinearForward(d, s[kMlpA], w_fc_->value, bias_ ? &b_fc_->value : nullptr, s[kMlpPre]);
    s[kMlpAct] = d.Tensor(n, f_);
    if (gated_) {
      kernels::SwiGluForward(s[kMlpPre].data(), n, f_, s[kMlpAct].data(), d.stream());
    } else {
      kernels::GeluForward(s[kMlpPre].data(), s[kMlpPre].size(), s[kMlpAct].data(), d.stream());
    }
    DeviceTensor y = d.Tensor(n, h_);
    LinearForward(d, s[kMlpAct], w_proj_->value, bias_ ? &b_proj_->value : nullptr, y);
    kernels::Add(y.data(), x.data(), y.size(), y.data(), d.stream());
    return y;
  }

  DeviceTensor InputGrad(const DeviceBatch&, DeviceTensor dy, DeviceCache& cache) override {
    RankDevice& d = dev();
    std::vector<DeviceTensor>& s = cache.saved;
    const int n = dy.rows();
    DeviceTensor dact = d.Tensor(n, f_);
    LinearInputGrad(d, dy, w_proj_->value, dact);
    s[kMlpDpre] = d.Tensor(n, gated_ ? 2 * f_ : f_);
    if (gated_) {
      kernels::SwiGluInputGrad(dact.data(), s[kMlpPre].data(), n, f_, s[kMlpDpre].data(),
                               d.stream());
    } else {
      kernels::GeluInputGrad(dact.data(), s[kMlpPre].data(), dact.size(), s[kMlpDpre].data(),
                             d.stream());
    }
    dact = DeviceTensor();
    s[kMlpPre] = DeviceTensor();
    s[kMlpDa] = d.Tensor(n, h_);
    LinearInputGrad(d, s[kMlpDpre], w_fc_->value, s[kMlpDa]);
    DeviceTensor dx = ResidualInputGrad(d, norm_, dy, s[kMlpDa], s[kMlpKept], s[kMlpRstd]);
    s[kMlpDy] = std::move(dy);
    return dx;
  }

  void WeightGrad(const DeviceBatch&, DeviceCache& cache) override {
    RankDevice& d = dev();
    std::vector<DeviceTensor>& s = cache.saved;
    LinearWeightGrad(d, s[kMlpDy], s[kMlpAct], w_proj_->grad, bias_ ? &b_proj_->grad : nullptr);
    LinearWeightGrad(d, s[kMlpDpre], s[kMlpA], w_fc_->grad, bias_ ? &b_fc_->grad : nullptr);
    norm_.WeightGrad(d, s[kMlpDa], s[kMlpKept], s[kMlpRstd]);
    s.clear();
  }

 private:
  int h_, f_;
  bool bias_, gated_;
  Norm norm_;
  DeviceParam *w_fc_ = nullptr, *b_fc_ = nullptr, *w_proj_ = nullptr, *b_proj_ = nullptr;
};

class FinalNorm final : public DeviceModule {
 public:
  FinalNorm(const DecoderSpec& spec, std::uint64_t seed, RankDevice& dev)
      : DeviceModule("final_norm", dev), h_(spec.hidden), norm_(spec.bias, nullptr, nullptr) {
    if (spec.bias) {
      DeviceParam* gamma = &AddParam("gamma", 1, h_, seed, 0, 1, false);
      DeviceParam* beta = &AddParam("beta", 1, h_, seed, 0, 0, false);
      norm_ = Norm(true, gamma, beta);
    } else {
      norm_ = Norm(false, &AddParam("weight", 1, h_, seed, 0, 1, false), nullptr);
    }
  }
  int OutputCols() const override { return h_; }
  DeviceTensor Forward(const DeviceBatch&, DeviceTensor x, DeviceCache& cache) override {
    std::vector<DeviceTensor>& s = cache.saved;
    s.resize(3);  // kept, rstd, dy
    DeviceTensor y = dev().Tensor(x.rows(), h_);
    norm_.Forward(dev(), x, y, s[0], s[1]);
    return y;
  }
  DeviceTensor InputGrad(const DeviceBatch&, DeviceTensor dy, DeviceCache& cache) override {
    std::vector<DeviceTensor>& s = cache.saved;
    DeviceTensor dx = dev().Tensor(dy.rows(), h_);
    norm_.InputGrad(dev(), dy, s[0], s[1], dx, false);
    s[2] = std::move(dy);
    return dx;
  }
  void WeightGrad(const DeviceBatch&, DeviceCache& cache) override {
    norm_.WeightGrad(dev(), cache.saved[2], cache.saved[0], cache.saved[1]);
    cache.saved.clear();
  }

 private:
  int h_;
  Norm norm_;
};

class Head final : public DeviceModule {
 public:
  Head(const DecoderSpec& spec, std::uint64_t seed, RankDevice& dev)
      : DeviceModule("head", dev), vocab_(spec.vocab) {
    // A tied head is a second copy of the embedding's table: same name, so same values.
    w_ = spec.tied_embeddings
             ? &AddParam("", spec.vocab, spec.hidden, seed, kInitStd, 0, false, "embedding.wte")
             : &AddParam("weight", spec.vocab, spec.hidden, seed, kInitStd, 0, true);
  }
  int OutputCols() const override { return vocab_; }
  DeviceTensor Forward(const DeviceBatch&, DeviceTensor x, DeviceCache& cache) override {
    DeviceTensor logits = dev().Tensor(x.rows(), vocab_);
    LinearForward(dev(), x, w_->value, nullptr, logits);
    cache.saved.resize(2);  // x, dlogits
    cache.saved[0] = std::move(x);
    return logits;
  }
  DeviceTensor InputGrad(const DeviceBatch&, DeviceTensor dy, DeviceCache& cache) override {
    DeviceTensor dx = dev().Tensor(dy.rows(), w_->value.cols());
    LinearInputGrad(dev(), dy, w_->value, dx);
    cache.saved[1] = std::move(dy);
    return dx;
  }
  void WeightGrad(const DeviceBatch&, DeviceCache& cache) override {
    LinearWeightGrad(dev(), cache.saved[1], cache.saved[0], w_->grad, nullptr);
    cache.saved.clear();
  }

 private:
  int vocab_;
  DeviceParam* w_;
};

// Softmax cross-entropy against the next tokens; the output is the microbatch's mean loss (1 x 1,
// also in cache.loss on the host). Its backward starts the backward pass.
class Loss final : public DeviceModule {
 public:
  Loss(const DecoderSpec& spec, RankDevice& dev) : DeviceModule("loss", dev), vocab_(spec.vocab) {}
  int OutputCols() const override { return 1; }
  DeviceTensor Forward(const DeviceBatch& batch, DeviceTensor logits, DeviceCache& cache) override {
    RankDevice& d = dev();
    const int rows = logits.rows();
    DeviceTensor row_loss = d.Tensor(rows, 1);
    kernels::CrossEntropyForward(logits.data(), batch.targets, rows, vocab_, row_loss.data(),
                                 d.stream());
    DeviceTensor out = d.Tensor(1, 1);
    kernels::Sum(row_loss.data(), rows, out.data(), d.stream());
    const float total = d.Download(out)[0];
    cache.loss = total / static_cast<float>(rows);
    d.Upload(&cache.loss, out);
    cache.saved.push_back(std::move(logits));
    return out;
  }
  DeviceTensor InputGrad(const DeviceBatch& batch, DeviceTensor, DeviceCache& cache) override {
    DeviceTensor dlogits = std::move(cache.saved.at(0));
    cache.saved.clear();
    kernels::CrossEntropyInputGrad(dlogits.data(), batch.targets, dlogits.rows(), vocab_,
                                   batch.host->loss_scale, dlogits.data(), dev().stream());
    return dlogits;
  }
  void WeightGrad(const DeviceBatch&, DeviceCache&) override {}

 private:
  int vocab_;
};

}  // namespace

DeviceParam& DeviceModule::AddParam(std::string_view param, int rows, int cols, std::uint64_t seed,
                                    float stddev, float fill, bool decay,
                                    std::string_view full_name) {
  DeviceParam p;
  p.name = full_name.empty() ? fmt::format("{}.{}", name_, param) : std::string(full_name);
  std::vector<float> host(static_cast<std::size_t>(rows) * cols);
  InitParamValues(seed, p.name, stddev, fill, host.data(), host.size());
  p.value = dev_.Upload(host.data(), rows, cols);
  p.grad = dev_.Tensor(rows, cols);
  p.decay = decay;
  params_.push_back(std::move(p));
  return params_.back();
}

Result<std::unique_ptr<DeviceModule>> MakeDeviceModule(const DecoderSpec& spec,
                                                       std::string_view layer, std::uint64_t seed,
                                                       RankDevice& dev) {
  bool mlp = false;
  const int block = BlockIndex(layer, mlp);
  std::unique_ptr<DeviceModule> module;
  if (block >= 0 && block < spec.layers) {
    if (mlp) return std::unique_ptr<DeviceModule>(new MlpHalf(spec, std::string(layer), seed, dev));
    return std::unique_ptr<DeviceModule>(new AttentionHalf(spec, std::string(layer), seed, dev));
  }
  if (layer == "embedding") return std::unique_ptr<DeviceModule>(new Embedding(spec, seed, dev));
  if (layer == "final_norm") return std::unique_ptr<DeviceModule>(new FinalNorm(spec, seed, dev));
  if (layer == "head") return std::unique_ptr<DeviceModule>(new Head(spec, seed, dev));
  if (layer == "loss") return std::unique_ptr<DeviceModule>(new Loss(spec, dev));
  return Status::InvalidArgument(
      fmt::format("model '{}' has no layer '{}' the cuda engine can build", spec.name, layer));
}

DeviceTensor DeviceChain::Forward(const DeviceBatch& batch, DeviceTensor x,
                                  std::vector<DeviceCache>& caches) {
  caches.resize(modules_.size());
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    x = modules_[i]->Forward(batch, std::move(x), caches[i]);
  }
  return x;
}

DeviceTensor DeviceChain::InputGrad(const DeviceBatch& batch, DeviceTensor dy,
                                    std::vector<DeviceCache>& caches) {
  for (std::size_t i = modules_.size(); i-- > 0;) {
    dy = modules_[i]->InputGrad(batch, std::move(dy), caches[i]);
  }
  return dy;
}

void DeviceChain::WeightGrad(const DeviceBatch& batch, std::vector<DeviceCache>& caches) {
  for (std::size_t i = modules_.size(); i-- > 0;) modules_[i]->WeightGrad(batch, caches[i]);
}

std::int64_t DeviceChain::CacheBytes(const std::vector<DeviceCache>& caches) {
  std::int64_t bytes = 0;
  for (const DeviceCache& cache : caches) {
    for (const DeviceTensor& t : cache.saved) bytes += t.bytes();
  }
  return bytes;
}

}  // namespace pipette::cuda
