#include "tensor.h"

#include <cblas.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>

// glibc's math.h declares the vector variants of expf in libmvec (_ZGVbN4v_expf and wider) only
// under the whole of -ffast-math; this file is built with fast math but keeps infinities (see
// CMakeLists.txt), so it says itself that expf has them, and GCC vectorises GELU and softmax.
// GCC on x86-64 only: clang does not know the attribute, and other targets' glibc may lack the
// variants it names (the loops then stay scalar).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
extern "C" __attribute__((simd("notinbranch"))) float expf(float) noexcept;
#endif

namespace pipette::cpu {
namespace {

std::vector<GemmCall>* gemm_calls = nullptr;
// The kernel profile while one is running (StartKernelProfile): per GEMM shape and per class.
struct Profile {
  std::map<std::tuple<int, int, int>, KernelSample> gemms;
  std::map<std::pair<int, int>, KernelSample> modules;  // by (ModuleKind, pass)
  double seconds[4] = {0, 0, 0, 0};                     // by KernelKind below kModule
  std::int64_t calls[4] = {0, 0, 0, 0};
};
std::unique_ptr<Profile> profile;
std::vector<KernelSample> profiled;  // the last profile, once stopped

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::int64_t live_bytes = 0;
std::int64_t peak_bytes = 0;

constexpr float kLayerNormEps = 1e-5f;  // LayerNorm and RMSNorm
constexpr double kRopeTheta = 10000.0;

}  // namespace

namespace {

// Keeps freed activation buffers in the process: glibc otherwise serves every allocation above
// 128 KiB with a fresh mmap, and each microbatch's tensors would pay their page faults again
// (about 10% of a block's pass at width 512). Set once, before the first tensor;
// larger buffers still get their own mmap.
bool ConfigureAllocator() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's upper limit on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return true;
}

}  // namespace

Tensor::Tensor(int rows, int cols) : rows_(rows), cols_(cols) {
  if (size() == 0) return;
  static const bool configured = ConfigureAllocator();
  (void)configured;
  data_ = std::make_unique<float[]>(size());  // value-initialised: zeros
  live_bytes += bytes();
  peak_bytes = std::max(peak_bytes, live_bytes);
}

Tensor::~Tensor() { Release(); }

Tensor::Tensor(Tensor&& other) noexcept
    : rows_(other.rows_), cols_(other.cols_), data_(std::move(other.data_)) {
  other.rows_ = other.cols_ = 0;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    Release();
    rows_ = other.rows_;
    cols_ = other.cols_;
    data_ = std::move(other.data_);
    other.rows_ = other.cols_ = 0;
  }
  return *this;
}

void Tensor::Release() {
  if (data_) live_bytes -= bytes();
  data_.reset();
  rows_ = cols_ = 0;
}

Tensor Tensor::Clone() const {
  Tensor copy(rows_, cols_);
  if (!empty()) std::memcpy(copy.data(), data(), static_cast<std::size_t>(bytes()));
  return copy;
}

std::int64_t LiveTensorBytes() { return live_bytes; }
std::int64_t PeakTensorBytes() { return peak_bytes; }
void ResetPeakTensorBytes() { peak_bytes = live_bytes; }
void RaisePeakTensorBytes(std::int64_t bytes) { peak_bytes = std::max(peak_bytes, bytes); }

void RecordGemmCalls(std::vector<GemmCall>* calls) { gemm_calls = calls; }

void StartKernelProfile() {
  profile = std::make_unique<Profile>();
  profiled.clear();
}

void StopKernelProfile() {
  if (!profile) return;
  for (const auto& [shape, sample] : profile->gemms) profiled.push_back(sample);
  for (const auto& [key, sample] : profile->modules) profiled.push_back(sample);
  for (int kind = 1; kind < 4; ++kind) {
    if (profile->calls[kind] > 0) {
      profiled.push_back(
          {static_cast<KernelKind>(kind), 0, 0, 0, profile->calls[kind], profile->seconds[kind]});
    }
  }
  profile.reset();
}

std::vector<KernelSample> KernelProfileSamples() { return profiled; }

KernelTimer::KernelTimer(KernelKind kind) : kind_(kind), start_(profile ? Now() : -1) {}

KernelTimer::KernelTimer(int module_kind, int pass)
    : kind_(KernelKind::kModule),
      module_(module_kind),
      pass_(pass),
      start_(profile && module_kind >= 0 ? Now() : -1) {}

KernelTimer::~KernelTimer() {
  if (!profile || start_ < 0) return;
  const double seconds = Now() - start_;
  if (kind_ == KernelKind::kModule) {
    KernelSample& sample = profile->modules[{module_, pass_}];
    sample.kind = KernelKind::kModule;
    sample.m = module_;
    sample.n = pass_;
    ++sample.calls;
    sample.seconds += seconds;
    return;
  }
  profile->seconds[static_cast<int>(kind_)] += seconds;
  ++profile->calls[static_cast<int>(kind_)];
}

void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  if (gemm_calls != nullptr) {
    gemm_calls->push_back({trans_a, trans_b, m, n, k, lda, ldb, ldc, beta});
  }
  const double start = profile ? Now() : 0;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (profile) {
    KernelSample& sample = profile->gemms[{m, n, k}];
    sample.m = m;
    sample.n = n;
    sample.k = k;
    ++sample.calls;
    sample.seconds += Now() - start;
  }
}

void LinearForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const int n = x.rows(), in = x.cols(), out = w.rows();
  Gemm(false, true, n, out, in, 1.0f, x.data(), in, w.data(), in, 0.0f, y.data(), out);
  if (bias == nullptr) return;
  for (int r = 0; r < n; ++r) {
    float* yr = y.row(r);
    for (int c = 0; c < out; ++c) yr[c] += (*bias)[c];
  }
}

void LinearInputGrad(const Tensor& dy, const Tensor& w, Tensor& dx) {
  const int n = dy.rows(), out = dy.cols(), in = w.cols();
  Gemm(false, false, n, in, out, 1.0f, dy.data(), out, w.data(), in, 0.0f, dx.data(), in);
}

void LinearWeightGrad(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias) {
  const int n = dy.rows(), out = dy.cols(), in = x.cols();
  Gemm(true, false, out, in, n, 1.0f, dy.data(), out, x.data(), in, 1.0f, dw.data(), in);
  if (dbias == nullptr) return;
  for (int r = 0; r < n; ++r) {
    const float* g = dy.row(r);
    for (int c = 0; c < out; ++c) (*dbias)[c] += g[c];
  }
}

void LayerNormForward(const Tensor& x, Tensor& xhat, Tensor& rstd) {
  const int cols = x.cols();
  for (int r = 0; r < x.rows(); ++r) {
    const float* xr = x.row(r);
    double mean = 0;
    for (int c = 0; c < cols; ++c) mean += xr[c];
    mean /= cols;
    double var = 0;
    for (int c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= cols;
    const float s = static_cast<float>(1.0 / std::sqrt(var + kLayerNormEps));
    const float mu = static_cast<float>(mean);
    float* hr = xhat.row(r);
    for (int c = 0; c < cols; ++c) hr[c] = (xr[c] - mu) * s;
    rstd[r] = s;
  }
}

void Affine(const Tensor& xhat, const Tensor& gamma, const Tensor& beta, Tensor& y) {
  const int cols = xhat.cols();
  for (int r = 0; r < xhat.rows(); ++r) {
    const float* hr = xhat.row(r);
    float* yr = y.row(r);
    for (int c = 0; c < cols; ++c) yr[c] = hr[c] * gamma[c] + beta[c];
  }
}

void LayerNormInputGrad(const Tensor& dy, const Tensor& xhat, const Tensor& rstd,
                        const Tensor& gamma, Tensor& dx, bool accumulate) {
  const int cols = dy.cols();
  for (int r = 0; r < dy.rows(); ++r) {
    const float* g = dy.row(r);
    const float* h = xhat.row(r);
    double sum = 0, dot = 0;  // of dxhat = dy * gamma, and of dxhat * xhat
    for (int c = 0; c < cols; ++c) {
      const double d = static_cast<double>(g[c]) * gamma[c];
      sum += d;
      dot += d * h[c];
    }
    const float mean = static_cast<float>(sum / cols);
    const float mean_dot = static_cast<float>(dot / cols);
    float* out = dx.row(r);
    for (int c = 0; c < cols; ++c) {
      const float v = rstd[r] * (g[c] * gamma[c] - mean - h[c] * mean_dot);
      out[c] = accumulate ? out[c] + v : v;
    }
  }
}

void AffineWeightGrad(const Tensor& dy, const Tensor& xhat, Tensor& dgamma, Tensor& dbeta) {
  const int cols = dy.cols();
  for (int r = 0; r < dy.rows(); ++r) {
    const float* g = dy.row(r);
    const float* h = xhat.row(r);
    for (int c = 0; c < cols; ++c) {
      dgamma[c] += g[c] * h[c];
      dbeta[c] += g[c];
    }
  }
}

namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
constexpr float kGeluDerivativeClamp = 20.0f;
}  // namespace

// gelu(x) = x * (1 + tanh(u)) / 2 with u = c (x + a x^3), computed as x * sigmoid(2u): the same
// function with one expf instead of tanhf (twice as fast here). At any finite x: where x^3 or
// exp(-2u) overflow, x / inf is x or 0 as it should be (IEEE division; see CMakeLists.txt).
void GeluForward(const Tensor& x, Tensor& y) {
  const KernelTimer timer(KernelKind::kActivation);
  const float* in = x.data();
  float* out = y.data();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = in[i];
    const float u = kGeluC * (v + kGeluA * v * v * v);
    out[i] = v / (1.0f + std::exp(-2.0f * u));
  }
}

void GeluInputGrad(const Tensor& dy, const Tensor& x, Tensor& dx) {
  const KernelTimer timer(KernelKind::kActivation);
  const float* in = x.data();
  const float* g = dy.data();
  float* out = dx.data();
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Past |x| = 20 the derivative is 1 or 0 to float precision (s (1 - s) is 0), and du would be
    // infinite from |x| = 1.8e19, making 0 * inf = NaN: x is held to [-20, 20].
    const float v = std::clamp(in[i], -kGeluDerivativeClamp, kGeluDerivativeClamp);
    const float u = kGeluC * (v + kGeluA * v * v * v);
    const float s = 1.0f / (1.0f + std::exp(-2.0f * u));  // (1 + tanh u) / 2
    const float du = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    out[i] = g[i] * (s + v * 2.0f * s * (1.0f - s) * du);
  }
}

void RmsNormForward(const Tensor& x, const Tensor& gamma, Tensor& xhat, Tensor& rstd, Tensor& y) {
  const int cols = x.cols();
  for (int r = 0; r < x.rows(); ++r) {
    const float* xr = x.row(r);
    double sq = 0;
    for (int c = 0; c < cols; ++c) sq += static_cast<double>(xr[c]) * xr[c];
    const float s = static_cast<float>(1.0 / std::sqrt(sq / cols + kLayerNormEps));
    float* hr = xhat.row(r);
    float* yr = y.row(r);
    for (int c = 0; c < cols; ++c) {
      hr[c] = xr[c] * s;
      yr[c] = hr[c] * gamma[c];
    }
    rstd[r] = s;
  }
}

void RmsNormInputGrad(const Tensor& dy, const Tensor& xhat, const Tensor& rstd, const Tensor& gamma,
                      Tensor& dx, bool accumulate) {
  const int cols = dy.cols();
  for (int r = 0; r < dy.rows(); ++r) {
    const float* g = dy.row(r);
    const float* h = xhat.row(r);
    double dot = 0;  // of dxhat = dy * gamma and xhat
    for (int c = 0; c < cols; ++c) dot += static_cast<double>(g[c]) * gamma[c] * h[c];
    const float mean_dot = static_cast<float>(dot / cols);
    float* out = dx.row(r);
    for (int c = 0; c < cols; ++c) {
      const float v = rstd[r] * (g[c] * gamma[c] - h[c] * mean_dot);
      out[c] = accumulate ? out[c] + v : v;
    }
  }
}

void RmsNormWeightGrad(const Tensor& dy, const Tensor& xhat, Tensor& dgamma) {
  const int cols = dy.cols();
  for (int r = 0; r < dy.rows(); ++r) {
    const float* g = dy.row(r);
    const float* h = xhat.row(r);
    for (int c = 0; c < cols; ++c) dgamma[c] += g[c] * h[c];
  }
}

void Rope(Tensor& qkv, int seq, int heads, int kv_heads, bool inverse) {
  const int d = qkv.cols() / (heads + 2 * kv_heads), half = d / 2;
  // cos and sin of every (position, pair), computed in double: angle t * theta^(-2i/d).
  std::vector<float> cos_table(static_cast<std::size_t>(seq) * half);
  std::vector<float> sin_table(cos_table.size());
  for (int t = 0; t < seq; ++t) {
    for (int i = 0; i < half; ++i) {
      const double angle = t * std::pow(kRopeTheta, -2.0 * i / d);
      cos_table[static_cast<std::size_t>(t) * half + i] = static_cast<float>(std::cos(angle));
      sin_table[static_cast<std::size_t>(t) * half + i] =
          static_cast<float>((inverse ? -1 : 1) * std::sin(angle));
    }
  }
  for (int r = 0; r < qkv.rows(); ++r) {
    const float* cs = cos_table.data() + static_cast<std::size_t>(r % seq) * half;
    const float* sn = sin_table.data() + static_cast<std::size_t>(r % seq) * half;
    float* row = qkv.row(r);
    for (int j = 0; j < heads + kv_heads; ++j) {  // the q heads, then the k heads
      float* x = row + j * d;
      for (int i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = a * cs[i] - b * sn[i];
        x[i + half] = b * cs[i] + a * sn[i];
      }
    }
  }
}

void SwigluForward(const Tensor& gate_up, Tensor& y) {
  const KernelTimer timer(KernelKind::kActivation);
  const int f = y.cols();
  for (int r = 0; r < y.rows(); ++r) {
    const float* g = gate_up.row(r);
    const float* u = g + f;
    float* out = y.row(r);
    for (int c = 0; c < f; ++c) out[c] = g[c] / (1.0f + std::exp(-g[c])) * u[c];
  }
}

void SwigluInputGrad(const Tensor& dy, const Tensor& gate_up, Tensor& dgate_up) {
  const KernelTimer timer(KernelKind::kActivation);
  const int f = dy.cols();
  for (int r = 0; r < dy.rows(); ++r) {
    const float* g = gate_up.row(r);
    const float* u = g + f;
    const float* dyr = dy.row(r);
    float* dg = dgate_up.row(r);
    float* du = dg + f;
    for (int c = 0; c < f; ++c) {
      const float s = 1.0f / (1.0f + std::exp(-g[c]));
      du[c] = dyr[c] * g[c] * s;
      dg[c] = dyr[c] * u[c] * s * (1.0f + g[c] * (1.0f - s));  // silu'(g) = s (1 + g (1 - s))
    }
  }
}

namespace {

// Where the heads of a (heads + 2*kv_heads)*d wide qkv row start.
struct QkvLayout {
  int d, ld, k_offset, v_offset, group;
  QkvLayout(int cols, int heads, int kv_heads)
      : d(cols / (heads + 2 * kv_heads)),
        ld(cols),
        k_offset(heads * d),
        v_offset((heads + kv_heads) * d),
        group(heads / kv_heads) {}
  int q(int j) const { return j * d; }
  int k(int j) const { return k_offset + (j / group) * d; }  // the kv head of query head j
  int v(int j) const { return v_offset + (j / group) * d; }
};

// Softmax of each row r of the seq x seq scores over columns 0..r, zero above the diagonal.
void CausalSoftmax(float* p, int seq) {
  const KernelTimer timer(KernelKind::kScores);
  for (int r = 0; r < seq; ++r) {
    float* pr = p + static_cast<std::size_t>(r) * seq;
    const float mx = *std::max_element(pr, pr + r + 1);
    float sum = 0;
    for (int c = 0; c <= r; ++c) sum += (pr[c] = std::exp(pr[c] - mx));
    const float inv = 1.0f / sum;
    for (int c = 0; c <= r; ++c) pr[c] *= inv;
    std::fill(pr + r + 1, pr + seq, 0.0f);
  }
}

}  // namespace

void AttentionForward(const Tensor& qkv, int batch, int seq, int heads, int kv_heads, Tensor& probs,
                      Tensor& out) {
  const QkvLayout l(qkv.cols(), heads, kv_heads);
  const int h = out.cols();
  const float scale = 1.0f / std::sqrt(static_cast<float>(l.d));
  for (int b = 0; b < batch; ++b) {
    const float* row = qkv.row(b * seq);
    for (int j = 0; j < heads; ++j) {
      float* p = probs.row((b * heads + j) * seq);
      Gemm(false, true, seq, seq, l.d, scale, row + l.q(j), l.ld, row + l.k(j), l.ld, 0.0f, p, seq);
      CausalSoftmax(p, seq);
      Gemm(false, false, seq, l.d, seq, 1.0f, p, seq, row + l.v(j), l.ld, 0.0f,
           out.row(b * seq) + j * l.d, h);
    }
  }
}

void AttentionInputGrad(const Tensor& dout, const Tensor& qkv, const Tensor& probs, int batch,
                        int seq, int heads, int kv_heads, Tensor& dqkv) {
  const QkvLayout l(qkv.cols(), heads, kv_heads);
  const int h = dout.cols(), d = l.d, ld = l.ld;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor dp(seq, seq);
  for (int b = 0; b < batch; ++b) {
    const float* row = qkv.row(b * seq);
    float* drow = dqkv.row(b * seq);
    for (int j = 0; j < heads; ++j) {
      const float* q = row + l.q(j);
      const float* k = row + l.k(j);
      const float* v = row + l.v(j);
      const float* p = probs.row((b * heads + j) * seq);
      const float* g = dout.row(b * seq) + j * d;
      // The first query head of a group writes its kv head's gradients, the others add to them.
      const float beta_kv = j % l.group == 0 ? 0.0f : 1.0f;
      Gemm(false, true, seq, seq, d, 1.0f, g, h, v, ld, 0.0f, dp.data(), seq);  // dP = dO V^T
      Gemm(true, false, seq, d, seq, 1.0f, p, seq, g, h, beta_kv, drow + l.v(j),
           ld);  // dV = P^T dO
      {
        const KernelTimer timer(KernelKind::kScores);
        for (int r = 0; r < seq; ++r) {  // dS = P * (dP - rowsum(P * dP)), in place in dp
          const float* pr = p + static_cast<std::size_t>(r) * seq;
          float* gr = dp.row(r);
          float dot = 0;
          for (int c = 0; c <= r; ++c) dot += pr[c] * gr[c];
          for (int c = 0; c <= r; ++c) gr[c] = pr[c] * (gr[c] - dot);
          std::fill(gr + r + 1, gr + seq, 0.0f);
        }
      }
      Gemm(false, false, seq, d, seq, scale, dp.data(), seq, k, ld, 0.0f, drow + l.q(j),
           ld);  // dQ = dS K
      Gemm(true, false, seq, d, seq, scale, dp.data(), seq, q, ld, beta_kv, drow + l.k(j),
           ld);  // dK = dS^T Q
    }
  }
}

}  // namespace pipette::cpu
