// The tensor-core attention kernels of flash_attention.h: flash_attention_math.h's blocks with
// WmmaOps, whose tile products are WMMA bf16 m16n16k16 fragments with fp32 accumulators, a warp
// per 16-row strip of the block's tile. Tiles live in dynamic shared memory (over 48 KiB: opted
// in per launch with cudaFuncSetAttribute).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/check.h"
#include "cuda/flash_attention.h"
#include "cuda/flash_attention_math.h"
#include "cuda/kernel_math.h"

namespace pipette::cuda::kernels {
namespace {

using flash::AccLd;
using flash::ElemLd;
using flash::kProbLd;
using flash::kScoreLd;
using flash::kStrip;
using flash::kTile;

// The device's Ops for flash_attention_math.h's blocks: kThreads threads, warp w owns strip w.
template <int D>
struct WmmaOps {
  using Elem = __nv_bfloat16;
  static constexpr int kDim = D;
  using FragA = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16,
                                       nvcuda::wmma::row_major>;
  using FragBCol = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16,
                                          nvcuda::wmma::col_major>;
  using FragBRow = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16,
                                          nvcuda::wmma::row_major>;
  using FragC = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;

  __device__ int Thread() const { return static_cast<int>(threadIdx.x); }
  __device__ int Threads() const { return static_cast<int>(blockDim.x); }
  __device__ int Warp() const { return static_cast<int>(threadIdx.x) / 32; }
  __device__ int Warps() const { return static_cast<int>(blockDim.x) / 32; }
  __device__ int Lane() const { return static_cast<int>(threadIdx.x) % 32; }
  __device__ int Lanes() const { return 32; }
  __device__ void SyncBlock() const { __syncthreads(); }
  __device__ void SyncWarp() const { __syncwarp(); }
  __device__ Elem ToElem(float x) const { return __float2bfloat16(x); }  // round to nearest even

  // c's strip rows (16 x kTile, ld kScoreLd) = a's strip rows (16 x D, ld ElemLd(D)) . b^T, b the
  // kTile x D tile (ld ElemLd(D)), read as a column-major D x kTile matrix.
  __device__ void ScoresABt(const Elem* a, const Elem* b, float* c, int strip) const {
    FragC acc[kTile / 16];
    for (int n = 0; n < kTile / 16; ++n) nvcuda::wmma::fill_fragment(acc[n], 0.0f);
    FragA fa;
    FragBCol fb;
    for (int k = 0; k < D; k += 16) {
      nvcuda::wmma::load_matrix_sync(fa, a + strip * kStrip * ElemLd(D) + k, ElemLd(D));
      for (int n = 0; n < kTile / 16; ++n) {
        nvcuda::wmma::load_matrix_sync(fb, b + n * 16 * ElemLd(D) + k, ElemLd(D));
        nvcuda::wmma::mma_sync(acc[n], fa, fb, acc[n]);
      }
    }
    for (int n = 0; n < kTile / 16; ++n) {
      nvcuda::wmma::store_matrix_sync(c + strip * kStrip * kScoreLd + n * 16, acc[n], kScoreLd,
                                      nvcuda::wmma::mem_row_major);
    }
  }
  // c's strip rows (16 x D, ld AccLd(D)) += a's strip rows (16 x kTile, ld kProbLd) . b, the
  // kTile x D tile (ld ElemLd(D)).
  __device__ void AccumulateAB(const Elem* a, const Elem* b, float* c, int strip) const {
    FragA fa[kTile / 16];
    for (int k = 0; k < kTile / 16; ++k) {
      nvcuda::wmma::load_matrix_sync(fa[k], a + strip * kStrip * kProbLd + k * 16, kProbLd);
    }
    FragBRow fb;
    FragC acc;
    for (int n = 0; n < D / 16; ++n) {
      float* cn = c + strip * kStrip * AccLd(D) + n * 16;
      nvcuda::wmma::load_matrix_sync(acc, cn, AccLd(D), nvcuda::wmma::mem_row_major);
      for (int k = 0; k < kTile / 16; ++k) {
        nvcuda::wmma::load_matrix_sync(fb, b + k * 16 * ElemLd(D) + n * 16, ElemLd(D));
        nvcuda::wmma::mma_sync(acc, fa[k], fb, acc);
      }
      nvcuda::wmma::store_matrix_sync(cn, acc, AccLd(D), nvcuda::wmma::mem_row_major);
    }
  }
};

// Carves the dynamic shared memory into tiles, in the order the ...SmemBytes functions count.
class SmemCarver {
 public:
  __device__ explicit SmemCarver(unsigned char* base) : next_(base) {}
  template <class T>
  __device__ T* Take(int bytes) {
    T* at = reinterpret_cast<T*>(next_);
    next_ += bytes;
    return at;
  }

 private:
  unsigned char* next_;
};

template <int D>
__global__ void __launch_bounds__(flash::kThreads)
    ForwardKernel(const float* qkv, math::AttnDims s, float* out, float* lse) {
  extern __shared__ __align__(128) unsigned char flash_smem[];
  SmemCarver m(flash_smem);
  flash::Tiles<__nv_bfloat16> t;
  t.q = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.k = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.v = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.p = m.Take<__nv_bfloat16>(flash::ProbTileBytes());
  t.s = m.Take<float>(flash::ScoreTileBytes());
  t.acc = m.Take<float>(flash::AccTileBytes(D));
  t.row = m.Take<float>(flash::RowBytes());
  t.row2 = m.Take<float>(flash::RowBytes());
  // The longest rows (the last query tiles) first: the causal triangle's work is uneven.
  const int qt = static_cast<int>(gridDim.x - 1 - blockIdx.x);
  flash::ForwardBlock(WmmaOps<D>{}, t, qkv, s, static_cast<int>(blockIdx.z),
                      static_cast<int>(blockIdx.y), qt, out, lse);
}

template <int D>
__global__ void __launch_bounds__(flash::kThreads)
    DqKernel(const float* dout, const float* qkv, const float* lse, const float* delta,
             math::AttnDims s, float* dqkv) {
  extern __shared__ __align__(128) unsigned char flash_smem[];
  SmemCarver m(flash_smem);
  flash::Tiles<__nv_bfloat16> t;
  t.q = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.g = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.k = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.v = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.ds = m.Take<__nv_bfloat16>(flash::ProbTileBytes());
  t.s = m.Take<float>(flash::ScoreTileBytes());
  t.dp = m.Take<float>(flash::ScoreTileBytes());
  t.acc = m.Take<float>(flash::AccTileBytes(D));
  t.row = m.Take<float>(flash::RowBytes());
  t.row2 = m.Take<float>(flash::RowBytes());
  const int qt = static_cast<int>(gridDim.x - 1 - blockIdx.x);
  flash::DqBlock(WmmaOps<D>{}, t, dout, qkv, lse, delta, s, static_cast<int>(blockIdx.z),
                 static_cast<int>(blockIdx.y), qt, dqkv);
}

template <int D>
__global__ void __launch_bounds__(flash::kThreads)
    DkvKernel(const float* dout, const float* qkv, const float* lse, const float* delta,
              math::AttnDims s, float* dqkv) {
  extern __shared__ __align__(128) unsigned char flash_smem[];
  SmemCarver m(flash_smem);
  flash::Tiles<__nv_bfloat16> t;
  t.k = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.v = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.q = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.g = m.Take<__nv_bfloat16>(flash::ElemTileBytes(D));
  t.p = m.Take<__nv_bfloat16>(flash::ProbTileBytes());
  t.ds = m.Take<__nv_bfloat16>(flash::ProbTileBytes());
  t.s = m.Take<float>(flash::ScoreTileBytes());
  t.dp = m.Take<float>(flash::ScoreTileBytes());
  t.acc = m.Take<float>(flash::AccTileBytes(D));
  t.acc2 = m.Take<float>(flash::AccTileBytes(D));
  t.row = m.Take<float>(flash::RowBytes());
  t.row2 = m.Take<float>(flash::RowBytes());
  // The first key tiles see the most query tiles: they go first.
  flash::DkvBlock(WmmaOps<D>{}, t, dout, qkv, lse, delta, s, static_cast<int>(blockIdx.z),
                  static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x), dqkv);
}

__global__ void DeltaKernel(std::int64_t n, const float* dout, const float* out, math::AttnDims s,
                            float* delta) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    math::AttentionDeltaAt(i, dout, out, s, delta);
  }
}

math::AttnDims DimsOf(const AttentionShape& s) {
  return {s.batch, s.seq, s.heads, s.kv_heads, s.head_dim};
}

// The largest shared memory a block of the current device may opt in to.
int MaxSmemPerBlock() {
  int device = 0, bytes = 0;
  PIPETTE_CUDA_CHECK(cudaGetDevice(&device));
  PIPETTE_CUDA_CHECK(
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return bytes;
}

// Launches `kernel` on a grid of (tiles, heads, batch) blocks of kThreads threads with `smem`
// bytes of dynamic shared memory, and checks the launch.
template <class... Params, class... Args>
void Launch(void (*kernel)(Params...), dim3 grid, int smem, cudaStream_t stream, Args... args) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  PIPETTE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<grid, flash::kThreads, smem, stream>>>(args...);
  PIPETTE_CUDA_CHECK(cudaGetLastError());
}

template <int D>
void Forward(const float* qkv, const math::AttnDims& s, float* out, float* lse,
             cudaStream_t stream) {
  const dim3 grid(flash::TileCount(s.seq), s.heads, s.batch);
  Launch(ForwardKernel<D>, grid, flash::ForwardSmemBytes(D), stream, qkv, s, out, lse);
}

template <int D>
void InputGrad(const float* dout, const float* qkv, const float* lse, const float* delta,
               const math::AttnDims& s, float* dqkv, cudaStream_t stream) {
  const unsigned tiles = flash::TileCount(s.seq);
  Launch(DqKernel<D>, dim3(tiles, s.heads, s.batch), flash::DqSmemBytes(D), stream, dout, qkv, lse,
         delta, s, dqkv);
  Launch(DkvKernel<D>, dim3(tiles, s.kv_heads, s.batch), flash::DkvSmemBytes(D), stream, dout, qkv,
         lse, delta, s, dqkv);
}

}  // namespace

bool FlashAttentionSupports(const AttentionShape& shape) {
  if (!flash::FlashHeadDim(shape.head_dim)) return false;
  if (shape.kv_heads <= 0 || shape.heads % shape.kv_heads != 0) return false;
  if (shape.batch > 65535 || shape.heads > 65535) return false;  // grid y and z
  return flash::DkvSmemBytes(shape.head_dim) <= MaxSmemPerBlock();
}

void FlashAttentionForward(const float* qkv, const AttentionShape& shape, float* out, float* lse,
                           cudaStream_t stream) {
  if (!FlashAttentionSupports(shape)) return AttentionForward(qkv, shape, out, lse, stream);
  const math::AttnDims s = DimsOf(shape);
  if (s.head_dim == 64) return Forward<64>(qkv, s, out, lse, stream);
  Forward<128>(qkv, s, out, lse, stream);
}

void FlashAttentionInputGrad(const float* dout, const float* qkv, const float* out,
                             const float* lse, const AttentionShape& shape, float* dqkv,
                             float* delta, cudaStream_t stream) {
  if (!FlashAttentionSupports(shape)) {
    return AttentionInputGrad(dout, qkv, out, lse, shape, dqkv, delta, stream);
  }
  const math::AttnDims s = DimsOf(shape);
  const std::int64_t query_rows = std::int64_t{s.batch} * s.heads * s.seq;
  if (query_rows == 0) return;
  const std::int64_t blocks = std::min<std::int64_t>((query_rows + 255) / 256, 65536);
  DeltaKernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(query_rows, dout, out, s, delta);
  PIPETTE_CUDA_CHECK(cudaGetLastError());
  if (s.head_dim == 64) return InputGrad<64>(dout, qkv, lse, delta, s, dqkv, stream);
  InputGrad<128>(dout, qkv, lse, delta, s, dqkv, stream);
}

}  // namespace pipette::cuda::kernels
