// The launchers of kernels.h: each `__global__` wrapper walks its thread indices with a grid-stride
// loop (64-bit indices, so n past 2^31 is fine) and calls the per-thread function of
// kernel_math.h; each launch is checked with cudaGetLastError (file:line of the launcher).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/kernel_math.h"
#include "cuda/kernels.h"

namespace pipette::cuda::kernels {
namespace {

constexpr int kBlock = 256;
// Grid-stride loops cover n with at most this many blocks.
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;

unsigned BlocksFor(std::int64_t n) {
  return static_cast<unsigned>(std::min((n + kBlock - 1) / kBlock, kMaxBlocks));
}

// for (i in this thread's share of [0, n)).
#define PIPETTE_FOR_EACH_INDEX(i, n)                                                               \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

// Launches `kernel` over n thread indices on `stream` (nothing when n is 0) and checks the launch.
#define PIPETTE_LAUNCH(kernel, n, stream, ...)                         \
  do {                                                                 \
    if ((n) > 0) {                                                     \
      kernel<<<BlocksFor(n), kBlock, 0, (stream)>>>((n), __VA_ARGS__); \
      PIPETTE_CUDA_CHECK(cudaGetLastError());                          \
    }                                                                  \
  } while (0)

// A launcher's precondition the engine broke (not user input: the engine checks the model first).
void Require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("pipette::cuda::kernels: ") + what);
}

math::AttnDims DimsOf(const AttentionShape& s) {
  Require(s.kv_heads > 0 && s.heads % s.kv_heads == 0, "heads must be a multiple of kv_heads");
  return {s.batch, s.seq, s.heads, s.kv_heads, s.head_dim};
}

std::int64_t Elements(int rows, int cols) { return static_cast<std::int64_t>(rows) * cols; }

// ---- kernels: one per launcher, index -> kernel_math.h ------------------------------------------

__global__ void LayerNormForwardKernel(std::int64_t n, const float* x, int cols, float* xhat,
                                       float* rstd) {
  PIPETTE_FOR_EACH_INDEX(r, n) math::LayerNormForwardRow(r, x, cols, xhat, rstd);
}
__global__ void AffineKernel(std::int64_t n, const float* xhat, const float* gamma,
                             const float* beta, int cols, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AffineAt(i, xhat, gamma, beta, cols, y);
}
__global__ void LayerNormInputGradKernel(std::int64_t n, const float* dy, const float* xhat,
                                         const float* rstd, const float* gamma, int cols, float* dx,
                                         bool accumulate) {
  PIPETTE_FOR_EACH_INDEX(r, n) {
    math::LayerNormInputGradRow(r, dy, xhat, rstd, gamma, cols, dx, accumulate);
  }
}
__global__ void AffineWeightGradKernel(std::int64_t n, const float* dy, const float* xhat, int rows,
                                       float* dgamma, float* dbeta) {
  const int cols = static_cast<int>(n);
  PIPETTE_FOR_EACH_INDEX(c, n) math::AffineWeightGradCol(c, dy, xhat, rows, cols, dgamma, dbeta);
}
__global__ void RmsNormForwardKernel(std::int64_t n, const float* x, const float* gamma, int cols,
                                     float* y, float* rstd) {
  PIPETTE_FOR_EACH_INDEX(r, n) math::RmsNormForwardRow(r, x, gamma, cols, y, rstd);
}
__global__ void RmsNormInputGradKernel(std::int64_t n, const float* dy, const float* x,
                                       const float* rstd, const float* gamma, int cols, float* dx,
                                       bool accumulate) {
  PIPETTE_FOR_EACH_INDEX(r, n) {
    math::RmsNormInputGradRow(r, dy, x, rstd, gamma, cols, dx, accumulate);
  }
}
__global__ void RmsNormWeightGradKernel(std::int64_t n, const float* dy, const float* x,
                                        const float* rstd, int rows, float* dgamma) {
  const int cols = static_cast<int>(n);
  PIPETTE_FOR_EACH_INDEX(c, n) math::RmsNormWeightGradCol(c, dy, x, rstd, rows, cols, dgamma);
}
__global__ void GeluForwardKernel(std::int64_t n, const float* x, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::GeluAt(i, x, y);
}
__global__ void GeluInputGradKernel(std::int64_t n, const float* dy, const float* x, float* dx) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::GeluInputGradAt(i, dy, x, dx);
}
__global__ void SwiGluForwardKernel(std::int64_t n, const float* gate_up, int f, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::SwiGluAt(i, gate_up, f, y);
}
__global__ void SwiGluInputGradKernel(std::int64_t n, const float* dy, const float* gate_up, int f,
                                      float* dgate_up) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::SwiGluInputGradAt(i, dy, gate_up, f, dgate_up);
}
__global__ void RopeKernel(std::int64_t n, float* qkv, math::AttnDims s, float theta,
                           bool inverse) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::RopeAt(i, qkv, s, theta, inverse);
}
__global__ void AttentionForwardKernel(std::int64_t n, const float* qkv, math::AttnDims s,
                                       float* out, float* lse) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AttentionForwardAt(i, qkv, s, out, lse);
}
__global__ void AttentionDeltaKernel(std::int64_t n, const float* dout, const float* out,
                                     math::AttnDims s, float* delta) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AttentionDeltaAt(i, dout, out, s, delta);
}
__global__ void AttentionDqKernel(std::int64_t n, const float* dout, const float* qkv,
                                  const float* lse, const float* delta, math::AttnDims s,
                                  float* dqkv) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AttentionDqAt(i, dout, qkv, lse, delta, s, dqkv);
}
__global__ void AttentionDkvKernel(std::int64_t n, const float* dout, const float* qkv,
                                   const float* lse, const float* delta, math::AttnDims s,
                                   float* dqkv) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AttentionDkvAt(i, dout, qkv, lse, delta, s, dqkv);
}
__global__ void EmbeddingKernel(std::int64_t n, const std::int32_t* tokens, const float* wte,
                                const float* wpe, int seq, int hidden, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::EmbeddingAt(i, tokens, wte, wpe, seq, hidden, y);
}
__global__ void EmbeddingChainKernel(std::int64_t n, const std::int32_t* tokens, std::int32_t* next,
                                     std::int32_t* leader) {
  PIPETTE_FOR_EACH_INDEX(t, n) math::EmbeddingChainAt(t, tokens, n, next, leader);
}
__global__ void EmbeddingWteGradKernel(std::int64_t n, const float* dy, const std::int32_t* tokens,
                                       int hidden, const std::int32_t* next,
                                       const std::int32_t* leader, float* dwte) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::EmbeddingWteGradAt(i, dy, tokens, hidden, next, leader, dwte);
}
__global__ void EmbeddingWpeGradKernel(std::int64_t n, const float* dy, int batch, int seq,
                                       int hidden, float* dwpe) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::EmbeddingWpeGradAt(i, dy, batch, seq, hidden, dwpe);
}
__global__ void CrossEntropyKernel(std::int64_t n, const float* logits, const std::int32_t* targets,
                                   int vocab, float* row_loss) {
  PIPETTE_FOR_EACH_INDEX(r, n) math::CrossEntropyRow(r, logits, targets, vocab, row_loss);
}
__global__ void CrossEntropyInputGradKernel(std::int64_t n, const float* logits,
                                            const std::int32_t* targets, int vocab, float scale,
                                            float* dlogits) {
  PIPETTE_FOR_EACH_INDEX(r, n) {
    math::CrossEntropyInputGradRow(r, logits, targets, vocab, scale, dlogits);
  }
}
__global__ void AddBiasKernel(std::int64_t n, const float* bias, int cols, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AddBiasAt(i, bias, cols, y);
}
__global__ void BiasGradKernel(std::int64_t n, const float* dy, int rows, float* dbias) {
  const int cols = static_cast<int>(n);
  PIPETTE_FOR_EACH_INDEX(c, n) math::BiasGradCol(c, dy, rows, cols, dbias);
}
__global__ void AddKernel(std::int64_t n, const float* a, const float* b, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AddAt(i, a, b, y);
}
__global__ void AxpyKernel(std::int64_t n, float alpha, const float* x, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AxpyAt(i, alpha, x, y);
}
// One block of kSumThreads threads.
__global__ void SumKernel(const float* x, std::int64_t n, float* out) {
  __shared__ double partials[math::kSumThreads];
  partials[threadIdx.x] = math::SumPartialAt(static_cast<int>(threadIdx.x), x, n);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = math::SumOfPartials(partials);
}
__global__ void CastToBf16Kernel(std::int64_t n, const float* x, __nv_bfloat16* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) {
    __nv_bfloat16_raw raw;
    raw.x = math::Bf16Bits(x[i]);
    y[i] = raw;
  }
}
__global__ void AdamWKernel(std::int64_t n, const math::AdamWSlice* slices, int count,
                            math::AdamWScalars s) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AdamWAt(i, slices, count, s);
}

}  // namespace

// ---- norms --------------------------------------------------------------------------------------

void LayerNormForward(const float* x, int rows, int cols, float* xhat, float* rstd,
                      cudaStream_t stream) {
  PIPETTE_LAUNCH(LayerNormForwardKernel, std::int64_t{rows}, stream, x, cols, xhat, rstd);
}
void Affine(const float* xhat, const float* gamma, const float* beta, int rows, int cols, float* y,
            cudaStream_t stream) {
  PIPETTE_LAUNCH(AffineKernel, Elements(rows, cols), stream, xhat, gamma, beta, cols, y);
}
void LayerNormInputGrad(const float* dy, const float* xhat, const float* rstd, const float* gamma,
                        int rows, int cols, float* dx, bool accumulate, cudaStream_t stream) {
  PIPETTE_LAUNCH(LayerNormInputGradKernel, std::int64_t{rows}, stream, dy, xhat, rstd, gamma, cols,
                 dx, accumulate);
}
void AffineWeightGrad(const float* dy, const float* xhat, int rows, int cols, float* dgamma,
                      float* dbeta, cudaStream_t stream) {
  PIPETTE_LAUNCH(AffineWeightGradKernel, std::int64_t{cols}, stream, dy, xhat, rows, dgamma, dbeta);
}
void RmsNormForward(const float* x, const float* gamma, int rows, int cols, float* y, float* rstd,
                    cudaStream_t stream) {
  PIPETTE_LAUNCH(RmsNormForwardKernel, std::int64_t{rows}, stream, x, gamma, cols, y, rstd);
}
void RmsNormInputGrad(const float* dy, const float* x, const float* rstd, const float* gamma,
                      int rows, int cols, float* dx, bool accumulate, cudaStream_t stream) {
  PIPETTE_LAUNCH(RmsNormInputGradKernel, std::int64_t{rows}, stream, dy, x, rstd, gamma, cols, dx,
                 accumulate);
}
void RmsNormWeightGrad(const float* dy, const float* x, const float* rstd, int rows, int cols,
                       float* dgamma, cudaStream_t stream) {
  PIPETTE_LAUNCH(RmsNormWeightGradKernel, std::int64_t{cols}, stream, dy, x, rstd, rows, dgamma);
}

// ---- activations --------------------------------------------------------------------------------

void GeluForward(const float* x, std::int64_t n, float* y, cudaStream_t stream) {
  PIPETTE_LAUNCH(GeluForwardKernel, n, stream, x, y);
}
void GeluInputGrad(const float* dy, const float* x, std::int64_t n, float* dx,
                   cudaStream_t stream) {
  PIPETTE_LAUNCH(GeluInputGradKernel, n, stream, dy, x, dx);
}
void SwiGluForward(const float* gate_up, int rows, int f, float* y, cudaStream_t stream) {
  PIPETTE_LAUNCH(SwiGluForwardKernel, Elements(rows, f), stream, gate_up, f, y);
}
void SwiGluInputGrad(const float* dy, const float* gate_up, int rows, int f, float* dgate_up,
                     cudaStream_t stream) {
  PIPETTE_LAUNCH(SwiGluInputGradKernel, Elements(rows, f), stream, dy, gate_up, f, dgate_up);
}

// ---- attention ----------------------------------------------------------------------------------

namespace {
void Rope(float* qkv, const AttentionShape& shape, float theta, bool inverse, cudaStream_t stream) {
  const math::AttnDims s = DimsOf(shape);
  Require(s.head_dim % 2 == 0, "RoPE needs an even head_dim");
  const std::int64_t pairs = Elements(s.batch, s.seq) * (s.heads + s.kv_heads) * (s.head_dim / 2);
  PIPETTE_LAUNCH(RopeKernel, pairs, stream, qkv, s, theta, inverse);
}
}  // namespace

void RopeForward(float* qkv, const AttentionShape& shape, float theta, cudaStream_t stream) {
  Rope(qkv, shape, theta, false, stream);
}
void RopeInputGrad(float* dqkv, const AttentionShape& shape, float theta, cudaStream_t stream) {
  Rope(dqkv, shape, theta, true, stream);
}

void AttentionForward(const float* qkv, const AttentionShape& shape, float* out, float* lse,
                      cudaStream_t stream) {
  const math::AttnDims s = DimsOf(shape);
  const std::int64_t query_rows = Elements(s.batch, s.heads) * s.seq;
  PIPETTE_LAUNCH(AttentionForwardKernel, query_rows, stream, qkv, s, out, lse);
}
void AttentionInputGrad(const float* dout, const float* qkv, const float* out, const float* lse,
                        const AttentionShape& shape, float* dqkv, float* delta,
                        cudaStream_t stream) {
  const math::AttnDims s = DimsOf(shape);
  const std::int64_t query_rows = Elements(s.batch, s.heads) * s.seq;
  const std::int64_t key_rows = Elements(s.batch, s.kv_heads) * s.seq;
  PIPETTE_LAUNCH(AttentionDeltaKernel, query_rows, stream, dout, out, s, delta);
  PIPETTE_LAUNCH(AttentionDqKernel, query_rows, stream, dout, qkv, lse, delta, s, dqkv);
  PIPETTE_LAUNCH(AttentionDkvKernel, key_rows, stream, dout, qkv, lse, delta, s, dqkv);
}

// ---- embedding, loss, elementwise ---------------------------------------------------------------

void EmbeddingForward(const std::int32_t* tokens, const float* wte, const float* wpe, int batch,
                      int seq, int hidden, float* y, cudaStream_t stream) {
  PIPETTE_LAUNCH(EmbeddingKernel, Elements(batch, seq) * hidden, stream, tokens, wte, wpe, seq,
                 hidden, y);
}

// The token chains (kernel_math.h) live in stream-ordered scratch memory, freed after the launch.
void EmbeddingWeightGrad(const float* dy, const std::int32_t* tokens, int batch, int seq,
                         int hidden, float* dwte, float* dwpe, cudaStream_t stream) {
  const std::int64_t n = Elements(batch, seq);
  if (n == 0 || hidden == 0) return;
  Require(n <= INT32_MAX, "the embedding gradient links at most 2^31 - 1 token positions");
  std::int32_t* chains = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&chains, 2 * n * sizeof(std::int32_t), stream));
  PIPETTE_LAUNCH(EmbeddingChainKernel, n, stream, tokens, chains, chains + n);
  PIPETTE_LAUNCH(EmbeddingWteGradKernel, n * hidden, stream, dy, tokens, hidden, chains, chains + n,
                 dwte);
  PIPETTE_CUDA_CHECK(cudaFreeAsync(chains, stream));
  if (dwpe != nullptr) {
    PIPETTE_LAUNCH(EmbeddingWpeGradKernel, Elements(seq, hidden), stream, dy, batch, seq, hidden,
                   dwpe);
  }
}
void CrossEntropyForward(const float* logits, const std::int32_t* targets, int rows, int vocab,
                         float* row_loss, cudaStream_t stream) {
  PIPETTE_LAUNCH(CrossEntropyKernel, std::int64_t{rows}, stream, logits, targets, vocab, row_loss);
}
void CrossEntropyInputGrad(const float* logits, const std::int32_t* targets, int rows, int vocab,
                           float scale, float* dlogits, cudaStream_t stream) {
  PIPETTE_LAUNCH(CrossEntropyInputGradKernel, std::int64_t{rows}, stream, logits, targets, vocab,
                 scale, dlogits);
}
void AddBias(float* y, const float* bias, int rows, int cols, cudaStream_t stream) {
  PIPETTE_LAUNCH(AddBiasKernel, Elements(rows, cols), stream, bias, cols, y);
}
void BiasGrad(const float* dy, int rows, int cols, float* dbias, cudaStream_t stream) {
  PIPETTE_LAUNCH(BiasGradKernel, std::int64_t{cols}, stream, dy, rows, dbias);
}
void Add(const float* a, const float* b, std::int64_t n, float* y, cudaStream_t stream) {
  PIPETTE_LAUNCH(AddKernel, n, stream, a, b, y);
}
void Axpy(float alpha, const float* x, std::int64_t n, float* y, cudaStream_t stream) {
  PIPETTE_LAUNCH(AxpyKernel, n, stream, alpha, x, y);
}
void Sum(const float* x, std::int64_t n, float* out, cudaStream_t stream) {
  SumKernel<<<1, math::kSumThreads, 0, stream>>>(x, n, out);  // n == 0 writes 0
  PIPETTE_CUDA_CHECK(cudaGetLastError());
}
void CastToBf16(const float* x, std::int64_t n, __nv_bfloat16* y, cudaStream_t stream) {
  PIPETTE_LAUNCH(CastToBf16Kernel, n, stream, x, y);
}

// ---- optimizer ----------------------------------------------------------------------------------

// The descriptor table goes to stream-ordered device memory: cudaMemcpyAsync from pageable memory
// returns once the table is staged, so `table` may go out of scope; the free is ordered after the
// kernel.
void AdamWStep(const std::vector<AdamWTensor>& tensors, const AdamWConfig& config, int step,
               cudaStream_t stream) {
  Require(step >= 1, "AdamW steps count from 1");
  std::vector<math::AdamWSlice> table;
  std::int64_t total = 0;
  for (const AdamWTensor& t : tensors) {
    table.push_back({t.param, t.grad, t.m, t.v, total, t.n, t.decay ? 1 : 0});
    total += t.n;
  }
  if (total == 0) return;
  const math::AdamWScalars scalars = math::MakeAdamWScalars(config.lr, config.beta1, config.beta2,
                                                            config.eps, config.weight_decay, step);
  const std::size_t bytes = table.size() * sizeof(math::AdamWSlice);
  math::AdamWSlice* device_table = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&device_table, bytes, stream));
  PIPETTE_CUDA_CHECK(
      cudaMemcpyAsync(device_table, table.data(), bytes, cudaMemcpyHostToDevice, stream));
  PIPETTE_LAUNCH(AdamWKernel, total, stream, device_table, static_cast<int>(table.size()), scalars);
  PIPETTE_CUDA_CHECK(cudaFreeAsync(device_table, stream));
}

}  // namespace pipette::cuda::kernels
