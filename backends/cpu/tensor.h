// Tensor and the dense kernels of the CPU engine: row-major fp32 matrices, GEMM through OpenBLAS
// (cblas_sgemm) and the elementwise pieces of a GPT block (LayerNorm, GELU, causal softmax) and of
// a Llama block (RMSNorm, RoPE, SwiGLU, grouped-query attention).
//
// A Tensor is a move-only rows x cols matrix. Every allocation is counted by a process-wide meter
// (LiveTensorBytes, PeakTensorBytes), which is how the engine measures each rank's memory. The
// engine runs one thread per rank process, so the meter is not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "pipette/engine/kernel_profile.h"

namespace pipette::cpu {

class Tensor {
 public:
  Tensor() = default;
  // A zero-filled rows x cols matrix. REQUIRES: rows, cols >= 0.
  Tensor(int rows, int cols);
  ~Tensor();
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // A deep copy.
  Tensor Clone() const;

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  std::size_t size() const { return static_cast<std::size_t>(rows_) * cols_; }
  std::int64_t bytes() const { return static_cast<std::int64_t>(size() * sizeof(float)); }
  bool empty() const { return size() == 0; }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  float* row(int r) { return data_.get() + static_cast<std::size_t>(r) * cols_; }
  const float* row(int r) const { return data_.get() + static_cast<std::size_t>(r) * cols_; }
  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }

 private:
  void Release();

  int rows_ = 0;
  int cols_ = 0;
  std::unique_ptr<float[]> data_;
};

// Bytes held by live tensors of this process, and the most ever held at once.
std::int64_t LiveTensorBytes();
std::int64_t PeakTensorBytes();
// Restarts the peak from the current live bytes.
void ResetPeakTensorBytes();
// Raises the peak to at least `bytes` (to restore it after measuring a stretch with a reset).
void RaisePeakTensorBytes(std::int64_t bytes);

// C = alpha * op(A) * op(B) + beta * C, row-major, op(X) = X or X^T; op(A) is m x k, op(B) k x n.
// One cblas_sgemm call; lda/ldb/ldc are row strides (they allow column blocks of wider matrices).
void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

// One Gemm call's arguments without the data: what the benchmark replays to measure the model's
// GEMM shapes on bare cblas_sgemm.
struct GemmCall {
  bool trans_a, trans_b;
  int m, n, k, lda, ldb, ldc;
  float beta;
  double flops() const { return 2.0 * m * n * k; }
};
// While set (not null), every Gemm call is appended to `calls`. For benchmarks; not thread-safe.
void RecordGemmCalls(std::vector<GemmCall>* calls);

// The kernel profile (engine/kernel_profile.h): between StartKernelProfile and StopKernelProfile
// every Gemm call's time is added to its shape's sample, and every KernelTimer's span to its
// kind's; KernelProfileSamples returns the last stopped profile. One per process (the engine's
// compute runs on one thread); not thread-safe.
void StartKernelProfile();
void StopKernelProfile();
std::vector<KernelSample> KernelProfileSamples();

// Times its scope as one call of a kernel of `kind` while a profile runs, or as one pass (0 F, 1 I,
// 2 W) of a module of ModuleKind `module_kind` (none for -1).
class KernelTimer {
 public:
  explicit KernelTimer(KernelKind kind);
  KernelTimer(int module_kind, int pass);
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

 private:
  KernelKind kind_;
  int module_ = 0, pass_ = 0;
  double start_;
};

// y = x W^T + bias (bias may be null). x: n x in, w: out x in, y: n x out.
void LinearForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);
// dx = dy W. dy: n x out, w: out x in, dx: n x in.
void LinearInputGrad(const Tensor& dy, const Tensor& w, Tensor& dx);
// dw += dy^T x; dbias += column sums of dy (dbias may be null).
void LinearWeightGrad(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias);

// Row-wise LayerNorm without the affine part: xhat = (x - mean) * rstd, rstd = 1/sqrt(var + eps).
// xhat: same shape as x; rstd: rows x 1.
void LayerNormForward(const Tensor& x, Tensor& xhat, Tensor& rstd);
// y = xhat * gamma + beta (gamma, beta: 1 x cols).
void Affine(const Tensor& xhat, const Tensor& gamma, const Tensor& beta, Tensor& y);
// dx (+)= LayerNorm input gradient for the affine output gradient dy (accumulates into dx when
// `accumulate`).
void LayerNormInputGrad(const Tensor& dy, const Tensor& xhat, const Tensor& rstd,
                        const Tensor& gamma, Tensor& dx, bool accumulate);
// dgamma += sum over rows of dy * xhat; dbeta += sum over rows of dy.
void AffineWeightGrad(const Tensor& dy, const Tensor& xhat, Tensor& dgamma, Tensor& dbeta);

// GELU, tanh approximation (GPT-2): y = gelu(x); dx = dy * gelu'(x).
void GeluForward(const Tensor& x, Tensor& y);
void GeluInputGrad(const Tensor& dy, const Tensor& x, Tensor& dx);

// RMSNorm (Llama): rstd = 1/sqrt(mean(x^2) + eps), xhat = x * rstd, y = xhat * gamma, eps 1e-5.
// xhat, y: same shape as x; rstd: rows x 1; gamma: 1 x cols.
void RmsNormForward(const Tensor& x, const Tensor& gamma, Tensor& xhat, Tensor& rstd, Tensor& y);
// dx (+)= RMSNorm input gradient for the output gradient dy: rstd * (dxhat - xhat *
// mean(dxhat * xhat)) with dxhat = dy * gamma (accumulates into dx when `accumulate`).
void RmsNormInputGrad(const Tensor& dy, const Tensor& xhat, const Tensor& rstd, const Tensor& gamma,
                      Tensor& dx, bool accumulate);
// dgamma += sum over rows of dy * xhat.
void RmsNormWeightGrad(const Tensor& dy, const Tensor& xhat, Tensor& dgamma);

// Rotary position embedding, HF "rotate half", theta 10000, in place on the q and k column blocks
// of a (batch*seq) x (heads + 2*kv_heads)*d qkv tensor (layout of AttentionForward). Row r is
// position r % seq. For i < d/2 the pair (i, i + d/2) of every q and k head rotates by angle
// t * theta^(-2i/d): x'[i] = x[i] cos - x[i+d/2] sin, x'[i+d/2] = x[i+d/2] cos + x[i] sin.
// `inverse` rotates by the negative angle: the backward of the forward rotation (it is
// orthogonal), applied to dq and dk. REQUIRES: d even.
void Rope(Tensor& qkv, int seq, int heads, int kv_heads, bool inverse);

// SwiGLU: gate_up is n x 2f (columns 0..f-1 the gate g, f..2f-1 the up projection u);
// y = silu(g) * u (n x f), silu(a) = a / (1 + exp(-a)).
void SwigluForward(const Tensor& gate_up, Tensor& y);
// dgate_up (n x 2f) for dy (n x f): dg = dy * u * silu'(g), du = dy * silu(g).
void SwigluInputGrad(const Tensor& dy, const Tensor& gate_up, Tensor& dgate_up);

// Causal self-attention with grouped-query heads over `batch` sequences of `seq` tokens, scale
// 1/sqrt(d). qkv: (batch*seq) x (heads + 2*kv_heads)*d with column blocks q (heads*d), k
// (kv_heads*d), v (kv_heads*d), head j in columns j*d..(j+1)*d of its block; query head j uses
// kv head j / (heads / kv_heads). kv_heads == heads is GPT's multi-head attention (q, k, v in
// column blocks of h). probs: (batch*heads*seq) x seq softmax probabilities (zero above the
// diagonal); out: (batch*seq) x heads*d. REQUIRES: heads % kv_heads == 0.
void AttentionForward(const Tensor& qkv, int batch, int seq, int heads, int kv_heads, Tensor& probs,
                      Tensor& out);
// dqkv = the gradient of qkv for dout, given the forward's qkv and probs (dk, dv summed over the
// query heads of each group).
void AttentionInputGrad(const Tensor& dout, const Tensor& qkv, const Tensor& probs, int batch,
                        int seq, int heads, int kv_heads, Tensor& dqkv);

}  // namespace pipette::cpu
