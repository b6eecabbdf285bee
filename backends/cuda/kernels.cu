// The launchers of kernels.h: each elementwise `__global__` wrapper walks its thread indices with a
// grid-stride loop (64-bit indices, so n past 2^31 is fine) and calls the per-thread function of
// kernel_math.h; row kernels run a block per row over kernel_math.h's lane functions and the
// block's fixed reduction tree, column sums two passes (partials per chunk of rows, then their
// sum in chunk order). Each launch is checked with cudaGetLastError (file:line of the launcher).
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

// The fixed reduction tree of kernel_math.h (BlockReduceModel) over the kRowThreads threads of a
// row block: each warp by xor shuffles (lane i adds lane i ^ o's value: both lanes of a pair get
// the same bits), then every warp reduces the warps' results the same way, so every thread returns
// the block's value. `shared` holds kRowWarps values.
__device__ double ShuffleXor(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ math::OnlineSoftmax ShuffleXor(math::OnlineSoftmax v, int o) {
  return {__shfl_xor_sync(0xffffffffu, v.max, o), __shfl_xor_sync(0xffffffffu, v.sum, o)};
}
template <class T, class Op>
__device__ T BlockReduce(T v, T identity, Op op, T* shared) {
  for (int o = math::kWarpSize / 2; o > 0; o /= 2) v = op(v, ShuffleXor(v, o));
  const int warp = static_cast<int>(threadIdx.x) / math::kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % math::kWarpSize;
  __syncthreads();  // every thread has read `shared` of an earlier call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < math::kRowWarps ? shared[lane] : identity;
  for (int o = math::kWarpSize / 2; o > 0; o /= 2) v = op(v, ShuffleXor(v, o));
  return v;
}
__device__ double BlockSum(double v, double* shared) {
  return BlockReduce(v, 0.0, math::SumOp{}, shared);
}

// Row kernels: block r (kRowThreads threads) computes row r; thread l is lane l.
__global__ void LayerNormForwardKernel(const float* x, const float* gamma, const float* beta,
                                       int cols, float* y, float* mean, float* rstd,
                                       std::uint16_t* y_bf16) {
  __shared__ double shared[math::kRowWarps];
  const std::int64_t r = blockIdx.x;
  const int l = static_cast<int>(threadIdx.x);
  const float* xr = x + r * cols;
  const double sum = BlockSum(math::LaneSum(l, cols, math::RowValues{xr}), shared);
  const double squared_deviation =
      BlockSum(math::LaneSum(l, cols, math::RowSquaredDeviation{xr, sum / cols}), shared);
  const math::NormStats s = math::LayerNormStatsOf(sum, squared_deviation, cols);
  math::LayerNormOutputLane(l, xr, gamma, beta, cols, s, y + r * cols);
  if (y_bf16 != nullptr) math::Bf16Lane(l, y + r * cols, cols, y_bf16 + r * cols);
  if (l == 0) {
    mean[r] = s.mean;
    rstd[r] = s.rstd;
  }
}
__global__ void LayerNormInputGradKernel(const float* dy, const float* x, const float* mean,
                                         const float* rstd, const float* gamma,
                                         const float* residual, int cols, float* dx) {
  __shared__ double shared[math::kRowWarps];
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * cols;
  const int l = static_cast<int>(threadIdx.x);
  const math::NormStats s{mean[blockIdx.x], rstd[blockIdx.x]};
  const double sum =
      BlockSum(math::LaneSum(l, cols, math::LayerNormGradSum{dy + at, gamma}), shared);
  const double dot =
      BlockSum(math::LaneSum(l, cols, math::LayerNormGradDot{dy + at, gamma, x + at, s}), shared);
  math::LayerNormInputGradLane(l, dy + at, x + at, gamma, cols, s, sum, dot,
                               residual != nullptr ? residual + at : nullptr, dx + at);
}
__global__ void RmsNormForwardKernel(const float* x, const float* gamma, int cols, float* y,
                                     float* rstd, std::uint16_t* y_bf16) {
  __shared__ double shared[math::kRowWarps];
  const std::int64_t r = blockIdx.x;
  const int l = static_cast<int>(threadIdx.x);
  const float* xr = x + r * cols;
  const float s =
      math::RmsNormRstdOf(BlockSum(math::LaneSum(l, cols, math::RowSquares{xr}), shared), cols);
  math::RmsNormOutputLane(l, xr, gamma, cols, s, y + r * cols);
  if (y_bf16 != nullptr) math::Bf16Lane(l, y + r * cols, cols, y_bf16 + r * cols);
  if (l == 0) rstd[r] = s;
}
__global__ void RmsNormInputGradKernel(const float* dy, const float* x, const float* rstd,
                                       const float* gamma, const float* residual, int cols,
                                       float* dx) {
  __shared__ double shared[math::kRowWarps];
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * cols;
  const int l = static_cast<int>(threadIdx.x);
  const double dot =
      BlockSum(math::LaneSum(l, cols, math::RmsNormGradDot{dy + at, gamma, x + at}), shared);
  math::RmsNormInputGradLane(l, dy + at, x + at, gamma, cols, rstd[blockIdx.x], dot,
                             residual != nullptr ? residual + at : nullptr, dx + at);
}
// Block r: row r's loss, and its gradient when dlogits is not null (in place when it aliases
// logits: every thread reads the target's logit before the reduction's barriers, every lane
// rewrites only its own columns after them).
__global__ void CrossEntropyKernel(const float* logits, const std::int32_t* targets, int vocab,
                                   int ld, float scale, float* row_loss, float* dlogits,
                                   std::uint16_t* dlogits_bf16) {
  __shared__ math::OnlineSoftmax shared[math::kRowWarps];
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * ld;
  const int l = static_cast<int>(threadIdx.x), target = targets[blockIdx.x];
  const float target_logit = logits[at + target];
  const math::OnlineSoftmax s = BlockReduce(math::SoftmaxLane(l, logits + at, vocab),
                                            math::EmptySoftmax(), math::SoftmaxMergeOp{}, shared);
  if (l == 0) row_loss[blockIdx.x] = math::CrossEntropyLossOf(s, target_logit);
  if (dlogits != nullptr) {
    math::CrossEntropyGradLane(l, logits + at, vocab, ld, target, s, scale, dlogits + at,
                               dlogits_bf16 != nullptr ? dlogits_bf16 + at : nullptr);
  }
}

// Column sums, pass 1: block (tile, chunk) of kColTile x kColLanes threads; the block halves its
// lanes' sums per column as kernel_math.h's ColReduceModel (HalvingTree).
template <class Terms>
__global__ void ColPartialKernel(Terms t, int rows, int cols, float* partials) {
  __shared__ float sums[Terms::kOut][math::kColLanes][math::kColTile];
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  const int chunk = static_cast<int>(blockIdx.y), chunks = static_cast<int>(gridDim.y);
  const int c = static_cast<int>(blockIdx.x) * math::kColTile + x;
  float acc[Terms::kOut];
  for (int k = 0; k < Terms::kOut; ++k) acc[k] = 0.0f;
  if (c < cols) math::ColLaneSum(t, chunk, y, c, rows, cols, acc);
  for (int k = 0; k < Terms::kOut; ++k) sums[k][y][x] = acc[k];
  __syncthreads();
  for (int o = math::kColLanes / 2; o > 0; o /= 2) {
    if (y < o) {
      for (int k = 0; k < Terms::kOut; ++k) sums[k][y][x] = sums[k][y][x] + sums[k][y + o][x];
    }
    __syncthreads();
  }
  if (y == 0 && c < cols) {
    for (int k = 0; k < Terms::kOut; ++k) {
      partials[(static_cast<std::int64_t>(k) * chunks + chunk) * cols + c] = sums[k][0][x];
    }
  }
}
// Pass 2: one thread per column.
__global__ void ColFinishKernel(std::int64_t n, const float* partials, int chunks, int outs,
                                float* out0, float* out1) {
  const int cols = static_cast<int>(n);
  PIPETTE_FOR_EACH_INDEX(c, n) math::ColFinish(c, partials, chunks, cols, outs, out0, out1);
}

// out0 (and out1) += the column sums of t's terms over rows x cols: the two passes, the partials
// in stream-ordered scratch memory.
template <class Terms>
void ColReduce(const Terms& t, int rows, int cols, float* out0, float* out1, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int chunks = math::ColChunks(rows);
  Require(chunks <= 65535, "column sums take at most 65535 chunks of rows");
  float* partials = nullptr;
  const std::size_t bytes = sizeof(float) * Terms::kOut * chunks * static_cast<std::size_t>(cols);
  PIPETTE_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&partials), bytes, stream));
  const dim3 grid((cols + math::kColTile - 1) / math::kColTile, chunks);
  const dim3 block(math::kColTile, math::kColLanes);
  ColPartialKernel<<<grid, block, 0, stream>>>(t, rows, cols, partials);
  PIPETTE_CUDA_CHECK(cudaGetLastError());
  PIPETTE_LAUNCH(ColFinishKernel, std::int64_t{cols}, stream, partials, chunks, Terms::kOut, out0,
                 out1);
  PIPETTE_CUDA_CHECK(cudaFreeAsync(partials, stream));
}

__global__ void GeluForwardKernel(std::int64_t n, const float* x, float* y, std::uint16_t* y_bf16) {
  PIPETTE_FOR_EACH_INDEX(i, n) {
    math::GeluAt(i, x, y);
    if (y_bf16 != nullptr) y_bf16[i] = math::Bf16Bits(y[i]);
  }
}
__global__ void GeluInputGradKernel(std::int64_t n, const float* dy, const float* x, float* dx,
                                    std::uint16_t* dx_bf16) {
  PIPETTE_FOR_EACH_INDEX(i, n) {
    math::GeluInputGradAt(i, dy, x, dx);
    if (dx_bf16 != nullptr) dx_bf16[i] = math::Bf16Bits(dx[i]);
  }
}
__global__ void SwiGluForwardKernel(std::int64_t n, const float* gate_up, int f, float* y,
                                    std::uint16_t* y_bf16) {
  PIPETTE_FOR_EACH_INDEX(i, n) {
    math::SwiGluAt(i, gate_up, f, y);
    if (y_bf16 != nullptr) y_bf16[i] = math::Bf16Bits(y[i]);
  }
}
__global__ void SwiGluInputGradKernel(std::int64_t n, const float* dy, const float* gate_up, int f,
                                      float* dgate_up, std::uint16_t* dgate_up_bf16) {
  PIPETTE_FOR_EACH_INDEX(i, n) {
    math::SwiGluInputGradAt(i, dy, gate_up, f, dgate_up);
    if (dgate_up_bf16 != nullptr) {  // the two elements element i wrote
      const std::int64_t r = i / f, at = r * 2 * f + (i - r * f);
      dgate_up_bf16[at] = math::Bf16Bits(dgate_up[at]);
      dgate_up_bf16[at + f] = math::Bf16Bits(dgate_up[at + f]);
    }
  }
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
__global__ void AddBiasKernel(std::int64_t n, const float* bias, int cols, float* y) {
  PIPETTE_FOR_EACH_INDEX(i, n) math::AddBiasAt(i, bias, cols, y);
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
// One block of kSumThreads threads: mean[0] = the mean of x; sum_of_means[0] += it (if not null).
__global__ void LossMeanKernel(const float* x, std::int64_t n, float* mean, double* sum_of_means) {
  __shared__ double partials[math::kSumThreads];
  partials[threadIdx.x] = math::SumPartialAt(static_cast<int>(threadIdx.x), x, n);
  __syncthreads();
  if (threadIdx.x == 0) {
    const float m = math::MeanOf(math::SumOfPartials(partials), n);
    mean[0] = m;
    if (sum_of_means != nullptr) sum_of_means[0] += m;
  }
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

// One block of kRowThreads threads per row.
#define PIPETTE_LAUNCH_ROWS(kernel, rows, stream, ...)                 \
  do {                                                                 \
    if ((rows) > 0) {                                                  \
      kernel<<<(rows), math::kRowThreads, 0, (stream)>>>(__VA_ARGS__); \
      PIPETTE_CUDA_CHECK(cudaGetLastError());                          \
    }                                                                  \
  } while (0)

void LayerNormForward(const float* x, const float* gamma, const float* beta, int rows, int cols,
                      float* y, float* mean, float* rstd, cudaStream_t stream,
                      __nv_bfloat16* y_bf16) {
  PIPETTE_LAUNCH_ROWS(LayerNormForwardKernel, rows, stream, x, gamma, beta, cols, y, mean, rstd,
                      reinterpret_cast<std::uint16_t*>(y_bf16));
}
void LayerNormInputGrad(const float* dy, const float* x, const float* mean, const float* rstd,
                        const float* gamma, const float* residual, int rows, int cols, float* dx,
                        cudaStream_t stream) {
  PIPETTE_LAUNCH_ROWS(LayerNormInputGradKernel, rows, stream, dy, x, mean, rstd, gamma, residual,
                      cols, dx);
}
void LayerNormWeightGrad(const float* dy, const float* x, const float* mean, const float* rstd,
                         int rows, int cols, float* dgamma, float* dbeta, cudaStream_t stream) {
  ColReduce(math::AffineTerms{dy, x, mean, rstd}, rows, cols, dgamma, dbeta, stream);
}
void RmsNormForward(const float* x, const float* gamma, int rows, int cols, float* y, float* rstd,
                    cudaStream_t stream, __nv_bfloat16* y_bf16) {
  PIPETTE_LAUNCH_ROWS(RmsNormForwardKernel, rows, stream, x, gamma, cols, y, rstd,
                      reinterpret_cast<std::uint16_t*>(y_bf16));
}
void RmsNormInputGrad(const float* dy, const float* x, const float* rstd, const float* gamma,
                      const float* residual, int rows, int cols, float* dx, cudaStream_t stream) {
  PIPETTE_LAUNCH_ROWS(RmsNormInputGradKernel, rows, stream, dy, x, rstd, gamma, residual, cols, dx);
}
void RmsNormWeightGrad(const float* dy, const float* x, const float* rstd, int rows, int cols,
                       float* dgamma, cudaStream_t stream) {
  ColReduce(math::RmsNormTerms{dy, x, rstd}, rows, cols, dgamma, nullptr, stream);
}

// ---- activations --------------------------------------------------------------------------------

void GeluForward(const float* x, std::int64_t n, float* y, cudaStream_t stream,
                 __nv_bfloat16* y_bf16) {
  PIPETTE_LAUNCH(GeluForwardKernel, n, stream, x, y, reinterpret_cast<std::uint16_t*>(y_bf16));
}
void GeluInputGrad(const float* dy, const float* x, std::int64_t n, float* dx, cudaStream_t stream,
                   __nv_bfloat16* dx_bf16) {
  PIPETTE_LAUNCH(GeluInputGradKernel, n, stream, dy, x, dx,
                 reinterpret_cast<std::uint16_t*>(dx_bf16));
}
void SwiGluForward(const float* gate_up, int rows, int f, float* y, cudaStream_t stream,
                   __nv_bfloat16* y_bf16) {
  PIPETTE_LAUNCH(SwiGluForwardKernel, Elements(rows, f), stream, gate_up, f, y,
                 reinterpret_cast<std::uint16_t*>(y_bf16));
}
void SwiGluInputGrad(const float* dy, const float* gate_up, int rows, int f, float* dgate_up,
                     cudaStream_t stream, __nv_bfloat16* dgate_up_bf16) {
  PIPETTE_LAUNCH(SwiGluInputGradKernel, Elements(rows, f), stream, dy, gate_up, f, dgate_up,
                 reinterpret_cast<std::uint16_t*>(dgate_up_bf16));
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
void CrossEntropy(const float* logits, const std::int32_t* targets, int rows, int vocab, int ld,
                  float scale, float* row_loss, float* dlogits, __nv_bfloat16* dlogits_bf16,
                  cudaStream_t stream) {
  if (dlogits == nullptr && dlogits_bf16 != nullptr) {
    throw std::invalid_argument("CrossEntropy: a bf16 gradient needs the fp32 one");
  }
  if (ld < vocab) throw std::invalid_argument("CrossEntropy: rows shorter than the vocabulary");
  PIPETTE_LAUNCH_ROWS(CrossEntropyKernel, rows, stream, logits, targets, vocab, ld, scale, row_loss,
                      dlogits, reinterpret_cast<std::uint16_t*>(dlogits_bf16));
}
void AddBias(float* y, const float* bias, int rows, int cols, cudaStream_t stream) {
  PIPETTE_LAUNCH(AddBiasKernel, Elements(rows, cols), stream, bias, cols, y);
}
void BiasGrad(const float* dy, int rows, int cols, float* dbias, cudaStream_t stream) {
  ColReduce(math::BiasTerms{dy}, rows, cols, dbias, nullptr, stream);
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
void LossMean(const float* row_loss, std::int64_t n, float* mean, double* sum_of_means,
              cudaStream_t stream) {
  Require(n > 0, "the mean of no rows");
  LossMeanKernel<<<1, math::kSumThreads, 0, stream>>>(row_loss, n, mean, sum_of_means);
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
