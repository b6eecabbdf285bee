// The CUDA engine's own kernels: everything of a GPT or Llama block that is not a GEMM (GEMMs go
// through cuBLASLt, lt_gemm.h). Each function launches its kernel(s) on `stream` and returns at
// once; pointers are device memory, fp32 unless named otherwise, matrices row-major (a row per
// token). Shapes are as the CPU engine's kernels (backends/cpu/tensor.h) and the formulas are
// identical to them, so the CPU engine checks this one on the same inputs.
//
// Every kernel's per-thread (per-lane) work is a plain function in kernel_math.h, compiled for the
// device and for the host: tests/cuda run those functions on the CPU over every thread index and
// compare with the CPU engine, so the math is checked on machines without a GPU.
//
// `accumulate` flags and functions named "...WeightGrad" add into their outputs (gradients sum
// over microbatches); everything else overwrites.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace pipette::cuda::kernels {

// ---- norms --------------------------------------------------------------------------------------
// One block per row (coalesced, the block's fixed reduction tree), fused with what surrounds it:
// the forward with the affine part, the input gradient with the residual. Column sums (weight
// gradients) are two deterministic passes through stream-ordered scratch memory; no atomics, so
// every launch gives the same bits.
//
// LayerNorm fused with its affine part: y = (x - mean) * rstd * gamma + beta, rstd =
// 1/sqrt(var + 1e-5); mean, rstd: rows (the backward reads them with x). The forwards of the norms
// and activations also write y's bf16 rounding into y_bf16 when it is not null (for bf16 GEMMs).
void LayerNormForward(const float* x, const float* gamma, const float* beta, int rows, int cols,
                      float* y, float* mean, float* rstd, cudaStream_t stream,
                      __nv_bfloat16* y_bf16 = nullptr);
// dx = residual + the LayerNorm input gradient for the affine output's gradient dy. residual may
// be null (dx = the gradient) or alias dx (dx += the gradient).
void LayerNormInputGrad(const float* dy, const float* x, const float* mean, const float* rstd,
                        const float* gamma, const float* residual, int rows, int cols, float* dx,
                        cudaStream_t stream);
// dgamma += sum over rows of dy * xhat; dbeta += sum over rows of dy (xhat from x, mean, rstd).
void LayerNormWeightGrad(const float* dy, const float* x, const float* mean, const float* rstd,
                         int rows, int cols, float* dgamma, float* dbeta, cudaStream_t stream);

// RMSNorm (Llama): rstd = 1/sqrt(mean(x^2) + 1e-5), y = x * rstd * gamma; rstd: rows.
void RmsNormForward(const float* x, const float* gamma, int rows, int cols, float* y, float* rstd,
                    cudaStream_t stream, __nv_bfloat16* y_bf16 = nullptr);
// dx = residual + the RMSNorm input gradient for dy (residual: as LayerNormInputGrad's).
void RmsNormInputGrad(const float* dy, const float* x, const float* rstd, const float* gamma,
                      const float* residual, int rows, int cols, float* dx, cudaStream_t stream);
// dgamma += sum over rows of dy * x * rstd.
void RmsNormWeightGrad(const float* dy, const float* x, const float* rstd, int rows, int cols,
                       float* dgamma, cudaStream_t stream);

// ---- activations --------------------------------------------------------------------------------
// GELU, tanh approximation (GPT-2), over n elements.
void GeluForward(const float* x, std::int64_t n, float* y, cudaStream_t stream,
                 __nv_bfloat16* y_bf16 = nullptr);
// The input gradients, likewise with their bf16 rounding when dx_bf16 / dgate_up_bf16 is not null.
void GeluInputGrad(const float* dy, const float* x, std::int64_t n, float* dx, cudaStream_t stream,
                   __nv_bfloat16* dx_bf16 = nullptr);
// SwiGLU: gate_up is rows x 2f, [gate | up] column blocks; y = silu(gate) * up, rows x f.
void SwiGluForward(const float* gate_up, int rows, int f, float* y, cudaStream_t stream,
                   __nv_bfloat16* y_bf16 = nullptr);
// dgate_up (rows x 2f) = the gradient of gate_up for dy (rows x f).
void SwiGluInputGrad(const float* dy, const float* gate_up, int rows, int f, float* dgate_up,
                     cudaStream_t stream, __nv_bfloat16* dgate_up_bf16 = nullptr);

// ---- attention ----------------------------------------------------------------------------------
// The column layout of a fused QKV row, (heads + 2 kv_heads) * head_dim wide: q heads, then k
// heads, then v heads, head j at columns j * head_dim of its block. Query head j reads key/value
// head j / (heads / kv_heads) (grouped-query attention; kv_heads == heads is plain multi-head).
struct AttentionShape {
  int batch = 0;  // sequences
  int seq = 0;    // tokens per sequence
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int qkv_cols() const { return (heads + 2 * kv_heads) * head_dim; }
  int out_cols() const { return heads * head_dim; }
};

// Rotary position embedding (Llama; the "rotate half" convention of HF transformers): for each
// q and k head and position t (within its sequence), pairs (i, i + d/2) rotate by the angle
// t * theta^(-2i/d). In place on the q and k columns of qkv (batch*seq rows); v is untouched.
void RopeForward(float* qkv, const AttentionShape& shape, float theta, cudaStream_t stream);
// The gradient through RopeForward: the inverse rotation, in place on the dq and dk columns.
void RopeInputGrad(float* dqkv, const AttentionShape& shape, float theta, cudaStream_t stream);

// Causal softmax attention, scale 1/sqrt(head_dim), flash-style: no seq x seq matrix is stored.
// out: (batch*seq) x out_cols; lse: batch*heads*seq, the log-sum-exp of each query row's scaled
// scores (what the backward needs to recompute the probabilities).
void AttentionForward(const float* qkv, const AttentionShape& shape, float* out, float* lse,
                      cudaStream_t stream);
// dqkv ((batch*seq) x qkv_cols, overwritten) = the gradient of qkv for dout, from the forward's
// qkv, out and lse. `delta` is workspace of batch*heads*seq floats.
void AttentionInputGrad(const float* dout, const float* qkv, const float* out, const float* lse,
                        const AttentionShape& shape, float* dqkv, float* delta,
                        cudaStream_t stream);

// ---- embedding, loss, elementwise ---------------------------------------------------------------
// y[t] = wte[tokens[t]] (+ wpe[t % seq] when wpe is not null); y: (batch*seq) x hidden.
void EmbeddingForward(const std::int32_t* tokens, const float* wte, const float* wpe, int batch,
                      int seq, int hidden, float* y, cudaStream_t stream);
// dwte[tokens[t]] += dy[t] (and dwpe[t % seq] += dy[t] when dwpe is not null).
void EmbeddingWeightGrad(const float* dy, const std::int32_t* tokens, int batch, int seq,
                         int hidden, float* dwte, float* dwpe, cudaStream_t stream);
// Cross-entropy, one block per row, one pass over the row for the loss (online max and sum):
// row_loss[r] = -log softmax(logits[r])[targets[r]] (the CPU engine's clamp at 1e-30 included);
// when dlogits is not null, a second pass writes dlogits = (softmax - onehot(targets)) * scale.
// dlogits may alias logits (the loss module's forward turns the logits into their gradient).
// dlogits_bf16 (may be null; needs dlogits): the gradient's bf16 rounding too, for bf16 GEMMs.
// Rows are `ld` >= vocab floats apart (the engine pads them, model.h's LogitsCols): the padding
// is never read, and both gradients get zeros there.
void CrossEntropy(const float* logits, const std::int32_t* targets, int rows, int vocab, int ld,
                  float scale, float* row_loss, float* dlogits, __nv_bfloat16* dlogits_bf16,
                  cudaStream_t stream);
// y[r][c] += bias[c].
void AddBias(float* y, const float* bias, int rows, int cols, cudaStream_t stream);
// dbias[c] += sum over rows of dy[r][c] (two deterministic passes, as the norms' weight gradients).
void BiasGrad(const float* dy, int rows, int cols, float* dbias, cudaStream_t stream);
// y = a + b over n elements (y may alias a or b).
void Add(const float* a, const float* b, std::int64_t n, float* y, cudaStream_t stream);
// y += alpha * x over n elements.
void Axpy(float alpha, const float* x, std::int64_t n, float* y, cudaStream_t stream);
// out[0] = sum of x[0..n) (one value, in a fixed order).
void Sum(const float* x, std::int64_t n, float* out, cudaStream_t stream);
// A microbatch's loss without the host: mean[0] = float(sum of row_loss[0..n)) / n (n > 0, the sum
// as Sum's), and sum_of_means[0] += mean[0] when sum_of_means is not null (the rank's step total).
void LossMean(const float* row_loss, std::int64_t n, float* mean, double* sum_of_means,
              cudaStream_t stream);
// y = bf16(x), round to nearest even, over n elements.
void CastToBf16(const float* x, std::int64_t n, __nv_bfloat16* y, cudaStream_t stream);

// ---- optimizer ----------------------------------------------------------------------------------
struct AdamWTensor {
  float* param = nullptr;
  const float* grad = nullptr;
  float* m = nullptr;  // first moment
  float* v = nullptr;  // second moment
  std::int64_t n = 0;
  bool decay = false;  // decoupled weight decay applies
};
struct AdamWConfig {
  double lr = 3e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};
// One AdamW step (step counts from 1) over every tensor of `tensors` in one launch (multi-tensor),
// with the CPU engine's formula (backends/cpu/param_set.cc). Gradients are left as they are.
void AdamWStep(const std::vector<AdamWTensor>& tensors, const AdamWConfig& config, int step,
               cudaStream_t stream);

}  // namespace pipette::cuda::kernels
