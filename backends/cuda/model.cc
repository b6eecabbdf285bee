#include "model.h"

#include <fmt/format.h>

#include <cmath>

#include "check.h"
#include "flash_attention.h"
#include "kernels.h"
#include "linear.h"
#include "pipette/engine/decoder_layers.h"
#include "pipette/engine/param_init.h"

namespace pipette::cuda {
namespace {

constexpr float kRopeTheta = 10000.0f;

// The pre-norm of a block half or the final norm: LayerNorm with gamma and beta (GPT, spec.bias)
// or RMSNorm with gamma (Llama). The caller keeps the norm's input x; Forward writes the row
// statistics `stats` (LayerNorm: 2 x rows, the means then the rstds; RMSNorm: 1 x rows, the
// rstds), which the input and weight gradients read with x.
class Norm {
 public:
  Norm(bool layer_norm, DeviceParam* gamma, DeviceParam* beta)
      : layer_norm_(layer_norm), gamma_(gamma), beta_(beta) {}

  // y = norm(x) (LayerNorm fused with its affine part); sets stats. With `y_bf16` (not null) also
  // y's bf16 rounding, for a GEMM that reads y.
  void Forward(RankDevice& dev, const DeviceTensor& x, DeviceTensor& y, DeviceTensor& stats,
               __nv_bfloat16* y_bf16 = nullptr) const {
    const int n = x.rows(), h = x.cols();
    if (layer_norm_) {
      stats = dev.Uninitialized(2, n);
      kernels::LayerNormForward(x.data(), gamma_->value.data(), beta_->value.data(), n, h, y.data(),
                                stats.data(), stats.data() + n, dev.stream(), y_bf16);
    } else {
      stats = dev.Uninitialized(1, n);
      kernels::RmsNormForward(x.data(), gamma_->value.data(), n, h, y.data(), stats.data(),
                              dev.stream(), y_bf16);
    }
  }
  // dx = residual + the norm's input gradient for dy, in one kernel (residual may be null).
  void InputGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& x,
                 const DeviceTensor& stats, const DeviceTensor* residual, DeviceTensor& dx) const {
    const int n = dy.rows(), h = dy.cols();
    const float* add = residual != nullptr ? residual->data() : nullptr;
    if (layer_norm_) {
      kernels::LayerNormInputGrad(dy.data(), x.data(), stats.data(), stats.data() + n,
                                  gamma_->value.data(), add, n, h, dx.data(), dev.stream());
    } else {
      kernels::RmsNormInputGrad(dy.data(), x.data(), stats.data(), gamma_->value.data(), add, n, h,
                                dx.data(), dev.stream());
    }
  }
  void WeightGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& x,
                  const DeviceTensor& stats) const {
    const int n = dy.rows(), h = dy.cols();
    if (layer_norm_) {
      kernels::LayerNormWeightGrad(dy.data(), x.data(), stats.data(), stats.data() + n, n, h,
                                   gamma_->grad.data(), beta_->grad.data(), dev.stream());
    } else {
      kernels::RmsNormWeightGrad(dy.data(), x.data(), stats.data(), n, h, gamma_->grad.data(),
                                 dev.stream());
    }
  }

 private:
  bool layer_norm_;
  DeviceParam* gamma_;
  DeviceParam* beta_;
};

// dx = dy + the norm's input gradient for dnorm: the residual's two paths, one kernel.
DeviceTensor ResidualInputGrad(RankDevice& dev, const Norm& norm, const DeviceTensor& dy,
                               const DeviceTensor& dnorm, const DeviceTensor& x,
                               const DeviceTensor& stats) {
  DeviceTensor dx = dev.Uninitialized(dy.rows(), dy.cols());
  norm.InputGrad(dev, dnorm, x, stats, &dy, dx);
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
    DeviceTensor y = dev().Uninitialized(batch.num_tokens(), h_);
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

// What a block half computes between its two linear layers: attention (with RoPE on q and k for
// rotary models) or the MLP's activation (GELU, or SwiGLU). It keeps its own tensors in `kept`
// from Forward to InputGrad and frees them there.
class Inner {
 public:
  virtual ~Inner() = default;
  virtual int pre_cols() const = 0;  // columns of the first linear layer's output
  virtual int act_cols() const = 0;  // columns of what the second linear layer reads
  // act = inner(pre); `pre` may be kept (moved into `kept`).
  virtual DeviceTensor Forward(RankDevice& d, const DeviceBatch& batch, DeviceTensor pre,
                               std::vector<DeviceTensor>& kept) = 0;
  // dpre for dact, given the forward's `act`.
  virtual DeviceTensor InputGrad(RankDevice& d, const DeviceBatch& batch, const DeviceTensor& dact,
                                 const DeviceTensor& act, std::vector<DeviceTensor>& kept) = 0;
};

// Causal attention over the fused QKV (grouped-query heads), RoPE first for rotary models.
class AttentionInner final : public Inner {
 public:
  explicit AttentionInner(const DecoderSpec& spec)
      : rope_(!spec.learned_positions),
        shape_{0, 0, spec.heads, spec.kv_heads, spec.hidden / spec.heads} {}
  int pre_cols() const override { return shape_.qkv_cols(); }
  int act_cols() const override { return shape_.out_cols(); }
  DeviceTensor Forward(RankDevice& d, const DeviceBatch& batch, DeviceTensor qkv,
                       std::vector<DeviceTensor>& kept) override {
    const kernels::AttentionShape shape = Shape(batch);
    if (rope_) kernels::RopeForward(qkv.data(), shape, kRopeTheta, d.stream());
    DeviceTensor out = d.Uninitialized(qkv.rows(), shape.out_cols());
    DeviceTensor lse = d.Uninitialized(shape.batch * shape.heads, shape.seq);
    const auto forward = Flash(d) ? kernels::FlashAttentionForward : kernels::AttentionForward;
    forward(qkv.data(), shape, out.data(), lse.data(), d.stream());
    kept.push_back(std::move(qkv));
    kept.push_back(std::move(lse));
    return out;
  }
  DeviceTensor InputGrad(RankDevice& d, const DeviceBatch& batch, const DeviceTensor& dout,
                         const DeviceTensor& out, std::vector<DeviceTensor>& kept) override {
    const kernels::AttentionShape shape = Shape(batch);
    DeviceTensor dqkv = d.Uninitialized(dout.rows(), shape.qkv_cols());
    DeviceTensor delta = d.Uninitialized(shape.batch * shape.heads, shape.seq);
    const auto grad = Flash(d) ? kernels::FlashAttentionInputGrad : kernels::AttentionInputGrad;
    grad(dout.data(), kept.at(0).data(), out.data(), kept.at(1).data(), shape, dqkv.data(),
         delta.data(), d.stream());
    if (rope_) kernels::RopeInputGrad(dqkv.data(), shape, kRopeTheta, d.stream());
    kept.clear();  // qkv and the log-sum-exp
    return dqkv;
  }

 private:
  // bf16 mode: the tensor-core kernels (flash_attention.h; they fall back to the exact ones for
  // head dims other than 64 and 128). fp32 mode: the exact kernels, for checking.
  static bool Flash(const RankDevice& d) { return d.precision() == GemmPrecision::kBf16; }
  kernels::AttentionShape Shape(const DeviceBatch& batch) const {
    kernels::AttentionShape shape = shape_;
    shape.batch = batch.host->sequences;
    shape.seq = batch.host->seq;
    return shape;
  }

  bool rope_;
  kernels::AttentionShape shape_;
};

// The MLP's activation: GELU of f columns, or SwiGLU of [gate | up] (2f columns) into f.
class ActivationInner final : public Inner {
 public:
  explicit ActivationInner(const DecoderSpec& spec) : f_(spec.ffn_hidden), gated_(spec.gated_mlp) {}
  int pre_cols() const override { return gated_ ? 2 * f_ : f_; }
  int act_cols() const override { return f_; }
  DeviceTensor Forward(RankDevice& d, const DeviceBatch&, DeviceTensor pre,
                       std::vector<DeviceTensor>& kept) override {
    DeviceTensor act = d.Uninitialized(pre.rows(), f_);
    __nv_bfloat16* act_bf16 = d.ShadowToWrite(act);  // bf16: what the proj GEMMs read
    if (gated_) {
      kernels::SwiGluForward(pre.data(), pre.rows(), f_, act.data(), d.stream(), act_bf16);
    } else {
      kernels::GeluForward(pre.data(), pre.size(), act.data(), d.stream(), act_bf16);
    }
    kept.push_back(std::move(pre));
    return act;
  }
  DeviceTensor InputGrad(RankDevice& d, const DeviceBatch&, const DeviceTensor& dact,
                         const DeviceTensor&, std::vector<DeviceTensor>& kept) override {
    const DeviceTensor& pre = kept.at(0);
    DeviceTensor dpre = d.Uninitialized(dact.rows(), pre_cols());
    __nv_bfloat16* dpre_bf16 = d.ShadowToWrite(dpre);  // bf16: what fc's I and W GEMMs read
    if (gated_) {
      kernels::SwiGluInputGrad(dact.data(), pre.data(), dact.rows(), f_, dpre.data(), d.stream(),
                               dpre_bf16);
    } else {
      kernels::GeluInputGrad(dact.data(), pre.data(), dact.size(), dpre.data(), d.stream(),
                             dpre_bf16);
    }
    kept.clear();
    return dpre;
  }

 private:
  int f_;
  bool gated_;
};

// Slots of a block half's cache; the inner part's tensors follow at kInner.
enum HalfSlot { kKept, kRstd, kA, kAct, kDy, kDpre, kDa, kInner };

// A pre-norm residual half of a block: y = x + W2 inner(W1 norm(x) + b1) + b2 (biases with
// spec.bias). `block{i}.attn` has W1 = qkv, W2 = proj around attention; `block{i}.mlp` has
// W1 = fc, W2 = proj around the activation. I keeps what W needs (a, act, dpre, dy, the norm's
// input statistics and da) and frees the inner part's tensors.
class BlockHalf final : public DeviceModule {
 public:
  BlockHalf(const DecoderSpec& spec, std::string name, bool mlp, std::uint64_t seed,
            RankDevice& dev)
      : DeviceModule(std::move(name), dev),
        h_(spec.hidden),
        bias_(spec.bias),
        inner_(mlp ? std::unique_ptr<Inner>(new ActivationInner(spec))
                   : std::unique_ptr<Inner>(new AttentionInner(spec))),
        norm_(spec.bias, nullptr, nullptr) {
    const float proj_std = kInitStd / std::sqrt(2.0f * spec.layers);
    if (bias_) {
      DeviceParam* gamma = &AddParam("ln.gamma", 1, h_, seed, 0, 1, false);
      DeviceParam* beta = &AddParam("ln.beta", 1, h_, seed, 0, 0, false);
      norm_ = Norm(true, gamma, beta);
    } else {
      norm_ = Norm(false, &AddParam("norm.weight", 1, h_, seed, 0, 1, false), nullptr);
    }
    const char* first = mlp ? "fc" : "qkv";
    w1_ =
        &AddParam(fmt::format("{}.weight", first), inner_->pre_cols(), h_, seed, kInitStd, 0, true);
    if (bias_)
      b1_ = &AddParam(fmt::format("{}.bias", first), 1, inner_->pre_cols(), seed, 0, 0, false);
    w2_ = &AddParam("proj.weight", h_, inner_->act_cols(), seed, proj_std, 0, true);
    if (bias_) b2_ = &AddParam("proj.bias", 1, h_, seed, 0, 0, false);
  }
  int OutputCols() const override { return h_; }

  DeviceTensor Forward(const DeviceBatch& batch, DeviceTensor x, DeviceCache& cache) override {
    RankDevice& d = dev();
    const int n = x.rows();
    std::vector<DeviceTensor>& s = cache.saved;
    s.resize(kInner);
    s[kA] = d.Uninitialized(n, h_);
    norm_.Forward(d, x, s[kA], s[kRstd], d.ShadowToWrite(s[kA]));  // bf16: rounded for fc/qkv
    DeviceTensor pre = d.Uninitialized(n, inner_->pre_cols());
    LinearForward(d, s[kA], w1_->value, bias_ ? &b1_->value : nullptr, pre);
    std::vector<DeviceTensor> kept;
    s[kAct] = inner_->Forward(d, batch, std::move(pre), kept);
    for (DeviceTensor& t : kept) s.push_back(std::move(t));
    DeviceTensor y = d.Uninitialized(n, h_);
    LinearForward(d, s[kAct], w2_->value, bias_ ? &b2_->value : nullptr, y, &x);  // + x
    s[kKept] = std::move(x);  // the norm's backward reads its input
    return y;
  }

  DeviceTensor InputGrad(const DeviceBatch& batch, DeviceTensor dy, DeviceCache& cache) override {
    RankDevice& d = dev();
    std::vector<DeviceTensor>& s = cache.saved;
    const int n = dy.rows();
    DeviceTensor dact = d.Uninitialized(n, inner_->act_cols());
    LinearInputGrad(d, dy, w2_->value, dact);
    std::vector<DeviceTensor> kept;
    for (std::size_t i = kInner; i < s.size(); ++i) kept.push_back(std::move(s[i]));
    s.resize(kInner);
    s[kDpre] = inner_->InputGrad(d, batch, dact, s[kAct], kept);
    s[kDa] = d.Uninitialized(n, h_);
    LinearInputGrad(d, s[kDpre], w1_->value, s[kDa]);
    DeviceTensor dx = ResidualInputGrad(d, norm_, dy, s[kDa], s[kKept], s[kRstd]);
    s[kDy] = std::move(dy);
    return dx;
  }

  void WeightGrad(const DeviceBatch&, DeviceCache& cache) override {
    RankDevice& d = dev();
    std::vector<DeviceTensor>& s = cache.saved;
    LinearWeightGrad(d, s[kDy], s[kAct], w2_->grad, bias_ ? &b2_->grad : nullptr);
    LinearWeightGrad(d, s[kDpre], s[kA], w1_->grad, bias_ ? &b1_->grad : nullptr);
    norm_.WeightGrad(d, s[kDa], s[kKept], s[kRstd]);
    s.clear();
  }

 private:
  int h_;
  bool bias_;
  std::unique_ptr<Inner> inner_;
  Norm norm_;
  DeviceParam *w1_ = nullptr, *b1_ = nullptr, *w2_ = nullptr, *b2_ = nullptr;
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
    s.resize(3);  // x, stats, dy
    DeviceTensor y = dev().Uninitialized(x.rows(), h_);
    norm_.Forward(dev(), x, y, s[1]);
    s[0] = std::move(x);
    return y;
  }
  DeviceTensor InputGrad(const DeviceBatch&, DeviceTensor dy, DeviceCache& cache) override {
    std::vector<DeviceTensor>& s = cache.saved;
    DeviceTensor dx = dev().Uninitialized(dy.rows(), h_);
    norm_.InputGrad(dev(), dy, s[0], s[1], nullptr, dx);
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

// logits = x W^T over rows padded to LogitsCols(vocab) columns (the padding zeroed, so that a
// message carrying the logits to another rank carries defined values).
class Head final : public DeviceModule {
 public:
  Head(const DecoderSpec& spec, std::uint64_t seed, RankDevice& dev)
      : DeviceModule("head", dev), vocab_(spec.vocab) {
    // A tied head is a second copy of the embedding's table: same name, so same values.
    w_ = spec.tied_embeddings
             ? &AddParam("", spec.vocab, spec.hidden, seed, kInitStd, 0, false, "embedding.wte")
             : &AddParam("weight", spec.vocab, spec.hidden, seed, kInitStd, 0, true);
  }
  int OutputCols() const override { return LogitsCols(vocab_); }
  DeviceTensor Forward(const DeviceBatch&, DeviceTensor x, DeviceCache& cache) override {
    RankDevice& d = dev();
    const int rows = x.rows(), cols = LogitsCols(vocab_);
    DeviceTensor logits = d.Uninitialized(rows, cols);
    if (cols > vocab_) {
      PIPETTE_CUDA_CHECK(cudaMemset2DAsync(logits.data() + vocab_, cols * sizeof(float), 0,
                                           (cols - vocab_) * sizeof(float), rows, d.stream()));
    }
    d.Gemm(HeadForwardArgs(rows, x.cols(), vocab_, d.ActivationOperand(x),
                           d.WeightOperand(w_->value), logits.data()));
    cache.saved.resize(2);  // x, dlogits
    cache.saved[0] = std::move(x);
    return logits;
  }
  DeviceTensor InputGrad(const DeviceBatch&, DeviceTensor dy, DeviceCache& cache) override {
    RankDevice& d = dev();
    DeviceTensor dx = d.Uninitialized(dy.rows(), w_->value.cols());
    d.Gemm(HeadInputGradArgs(dy.rows(), dx.cols(), vocab_, d.ActivationOperand(dy),
                             d.WeightOperand(w_->value), dx.data()));
    cache.saved[1] = std::move(dy);
    return dx;
  }
  void WeightGrad(const DeviceBatch&, DeviceCache& cache) override {
    RankDevice& d = dev();
    const DeviceTensor& dy = cache.saved[1];
    const DeviceTensor& x = cache.saved[0];
    d.Gemm(HeadWeightGradArgs(dy.rows(), x.cols(), vocab_, d.ActivationOperand(dy),
                              d.ActivationOperand(x), w_->grad.data()));
    cache.saved.clear();
  }

 private:
  int vocab_;
  DeviceParam* w_;
};

// Softmax cross-entropy against the next tokens. Forward computes the loss and already the
// gradient (the loss scale is the batch's): one kernel turns the logits into dlogits in place,
// and the microbatch's mean loss (the 1 x 1 output) is added on the device into the rank's step
// total (batch.loss_sum), so no forward waits for the host. InputGrad returns dlogits.
class Loss final : public DeviceModule {
 public:
  Loss(const DecoderSpec& spec, RankDevice& dev) : DeviceModule("loss", dev), vocab_(spec.vocab) {}
  int OutputCols() const override { return 1; }
  DeviceTensor Forward(const DeviceBatch& batch, DeviceTensor logits, DeviceCache& cache) override {
    RankDevice& d = dev();
    const int rows = logits.rows();
    DeviceTensor row_loss = d.Tensor(rows, 1);
    // At bf16 the kernel also writes dlogits' rounding, which the head's I and W GEMMs read.
    kernels::CrossEntropy(logits.data(), batch.targets, rows, vocab_, logits.cols(),
                          batch.host->loss_scale, row_loss.data(), logits.data(),
                          d.ShadowToWrite(logits), d.stream());
    DeviceTensor out = d.Tensor(1, 1);
    kernels::LossMean(row_loss.data(), rows, out.data(), batch.loss_sum, d.stream());
    cache.saved.push_back(std::move(logits));  // now dlogits
    return out;
  }
  DeviceTensor InputGrad(const DeviceBatch&, DeviceTensor, DeviceCache& cache) override {
    DeviceTensor dlogits = std::move(cache.saved.at(0));
    cache.saved.clear();
    return dlogits;
  }
  void WeightGrad(const DeviceBatch&, DeviceCache&) override {}

 private:
  int vocab_;
};

}  // namespace

int LogitsCols(int vocab) { return (vocab + 63) / 64 * 64; }

GemmArgs HeadForwardArgs(int rows, int hidden, int vocab, GemmOperand x, GemmOperand w,
                         float* logits) {
  GemmArgs g = LinearForwardArgs(rows, hidden, vocab, x, w, nullptr, nullptr, logits);
  g.ldc = g.ldd = LogitsCols(vocab);
  return g;
}

GemmArgs HeadInputGradArgs(int rows, int hidden, int vocab, GemmOperand dlogits, GemmOperand w,
                           float* dx) {
  GemmArgs g = LinearInputGradArgs(rows, hidden, vocab, dlogits, w, dx, false);
  g.lda = LogitsCols(vocab);
  return g;
}

GemmArgs HeadWeightGradArgs(int rows, int hidden, int vocab, GemmOperand dlogits, GemmOperand x,
                            float* dw) {
  GemmArgs g = LinearWeightGradArgs(rows, hidden, vocab, dlogits, x, dw);
  g.lda = LogitsCols(vocab);
  return g;
}

int DeviceOutputCols(const TrainPlan& plan, int stage) {
  const std::vector<std::string>& layers = plan.piece_layers[plan.stage_piece[stage]];
  const int cols = plan.stage_output_cols[stage];
  return layers.back() == "head" ? LogitsCols(cols) : cols;
}

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
  if (block >= 0 && block < spec.layers) {
    return std::unique_ptr<DeviceModule>(new BlockHalf(spec, std::string(layer), mlp, seed, dev));
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
