// The per-thread work of every kernel in kernels.h, as plain inline functions compiled for the
// device (under nvcc, `__host__ __device__`) and for the host (under g++, ordinary C++ with no CUDA
// header). kernels.cu's `__global__` wrappers map a thread index to one of these calls; the host
// tests (tests/cuda/kernel_math_test.cc) call them over every index on the CPU and compare with the
// CPU engine, so the math is checked where there is no GPU.
//
// Threading, and therefore what an index means, is part of each function's contract:
//   ...At(i, ...)      one thread per element (or per output element / pair, as stated)
//   ...Lane(l, ...)    lane l of a block of kRowThreads per row (norms, cross-entropy); the
//                      block reduces its lanes' partials by a fixed tree, and ...Block(r, ...)
//                      runs a whole row's block on the host, reduction tree included
//   ColLaneSum, ColFinish  the two passes of a column sum (weight and bias gradients);
//                      ColReduceModel runs both on the host
// Every function writes only the outputs its own index owns, so a launch needs no atomics and its
// result does not depend on the order threads run in (deterministic). Formulas follow the CPU
// engine's kernels (backends/cpu/tensor.h, the Loss module in gpt.cc, ParamSet::Step) operation
// for operation, including where they accumulate in double; row and column sums add in their
// block's fixed order instead of the CPU engine's row order (the sums differ in the last bits,
// within the tests' 1e-5), and the cross-entropy's softmax sum is online (rescaled as its max
// grows). The ...Block and ...Model functions are host-only (the tests' path; kernels.cu mirrors
// them with shuffles and shared memory).
//
// Attention's per-(sequence, head, query row) arrays (lse, delta) are laid out
// [(b * heads + j) * seq + r], like the CPU engine's probability rows.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PIPETTE_HD __host__ __device__
#else
#define PIPETTE_HD
#endif

namespace pipette::cuda::math {

// LayerNorm's and RMSNorm's epsilon (the CPU engine's kLayerNormEps).
constexpr float kNormEps = 1e-5f;
// GELU's tanh approximation: sqrt(2 / pi) and the cubic coefficient.
constexpr float kGeluC = 0.7978845608028654f;
constexpr float kGeluA = 0.044715f;

// ---- block reductions -------------------------------------------------------------------------
//
// Row kernels (norms, cross-entropy) run one block of kRowThreads threads per row: lane l of the
// block handles columns l, l + kRowThreads, ... (a warp reads 32 consecutive floats: coalesced),
// keeps a partial, and the block reduces the partials by a fixed tree (kernels.cu's BlockReduce):
// each warp by shuffles with xor offsets 16, 8, 4, 2, 1, then warp 0's lanes the warps' results
// (zeros past the last warp) the same way. HalvingTree and BlockReduceModel are that tree on the
// host, addition for addition (v[i] + v[i ^ o] is the sum both lanes of a butterfly compute), so a
// launch's result is reproducible bit for bit and the host computes what the device does.
constexpr int kRowThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kRowWarps = kRowThreads / kWarpSize;

// Reduces v[0..n) (n a power of two) in place: v[i] = op(v[i], v[i + o]) for o = n/2, ..., 1.
template <class T, class Op>
T HalvingTree(T* v, int n, Op op) {
  for (int o = n / 2; o > 0; o /= 2) {
    for (int i = 0; i < o; ++i) v[i] = op(v[i], v[i + o]);
  }
  return v[0];
}

// The block's reduction of kRowThreads lane partials (v is overwritten), as BlockReduce.
template <class T, class Op>
T BlockReduceModel(T* v, T identity, Op op) {
  T warps[kWarpSize];
  for (int w = 0; w < kWarpSize; ++w) {
    warps[w] = w < kRowWarps ? HalvingTree(v + w * kWarpSize, kWarpSize, op) : identity;
  }
  return HalvingTree(warps, kWarpSize, op);
}

struct SumOp {
  PIPETTE_HD double operator()(double a, double b) const { return a + b; }
};

// The lane partials of a row reduction, in double: lane l adds term(c) for its columns in order.
template <class Term>
PIPETTE_HD double LaneSum(int lane, int cols, const Term& term) {
  double sum = 0;
  for (int c = lane; c < cols; c += kRowThreads) sum += term(c);
  return sum;
}

// ---- norms ------------------------------------------------------------------------------------
//
// LayerNorm keeps its input x and each row's mean and rstd (not xhat): the backward recomputes
// xhat = (x - mean) * rstd with the forward's float operations, so the values are the CPU
// engine's xhat. Reductions over a row accumulate in double as the CPU engine does (each lane its
// partial, then the block's tree): the row kernels are bound by memory bandwidth, and an H100's
// double rate (half its float rate) leaves them so.

struct RowValues {  // term(c) = a[c]
  const float* a;
  PIPETTE_HD double operator()(int c) const { return a[c]; }
};
struct RowSquaredDeviation {  // (x[c] - mean)^2 with the double mean
  const float* x;
  double mean;
  PIPETTE_HD double operator()(int c) const { return (x[c] - mean) * (x[c] - mean); }
};
struct RowSquares {
  const float* x;
  PIPETTE_HD double operator()(int c) const { return static_cast<double>(x[c]) * x[c]; }
};

// A row's statistics: LayerNorm's float mean and rstd, RMSNorm's rstd (mean 0).
struct NormStats {
  float mean;
  float rstd;
};
PIPETTE_HD inline NormStats LayerNormStatsOf(double sum, double squared_deviation, int cols) {
  return {static_cast<float>(sum / cols),
          static_cast<float>(1.0 / sqrt(squared_deviation / cols + kNormEps))};
}
PIPETTE_HD inline float RmsNormRstdOf(double squares, int cols) {
  return static_cast<float>(1.0 / sqrt(squares / cols + kNormEps));
}
PIPETTE_HD inline float Xhat(float x, NormStats s) { return (x - s.mean) * s.rstd; }

// Lane `lane`'s columns of LayerNorm's output row: y = xhat * gamma + beta.
PIPETTE_HD inline void LayerNormOutputLane(int lane, const float* xr, const float* gamma,
                                           const float* beta, int cols, NormStats s, float* yr) {
  for (int c = lane; c < cols; c += kRowThreads) yr[c] = Xhat(xr[c], s) * gamma[c] + beta[c];
}
// Lane `lane`'s columns of RMSNorm's output row: y = x * rstd * gamma.
PIPETTE_HD inline void RmsNormOutputLane(int lane, const float* xr, const float* gamma, int cols,
                                         float rstd, float* yr) {
  for (int c = lane; c < cols; c += kRowThreads) yr[c] = xr[c] * rstd * gamma[c];
}

// The LayerNorm input gradient's row sums: of dxhat = dy * gamma, and of dxhat * xhat.
struct LayerNormGradSum {
  const float* g;
  const float* gamma;
  PIPETTE_HD double operator()(int c) const { return static_cast<double>(g[c]) * gamma[c]; }
};
struct LayerNormGradDot {
  const float* g;
  const float* gamma;
  const float* xr;
  NormStats s;
  PIPETTE_HD double operator()(int c) const {
    return static_cast<double>(g[c]) * gamma[c] * Xhat(xr[c], s);
  }
};
// Lane `lane`'s columns of dx = residual + rstd * (dy*gamma - mean(dxhat) - xhat *
// mean(dxhat*xhat)) (residual may be null, or alias dx: each element is read before it is written,
// by its lane only).
PIPETTE_HD inline void LayerNormInputGradLane(int lane, const float* g, const float* xr,
                                              const float* gamma, int cols, NormStats s, double sum,
                                              double dot, const float* residual, float* out) {
  const float mean = static_cast<float>(sum / cols), mean_dot = static_cast<float>(dot / cols);
  for (int c = lane; c < cols; c += kRowThreads) {
    const float v = s.rstd * (g[c] * gamma[c] - mean - Xhat(xr[c], s) * mean_dot);
    out[c] = residual != nullptr ? residual[c] + v : v;
  }
}

// The RMSNorm input gradient's row sum of dy * gamma * x.
struct RmsNormGradDot {
  const float* g;
  const float* gamma;
  const float* xr;
  PIPETTE_HD double operator()(int c) const { return static_cast<double>(g[c]) * gamma[c] * xr[c]; }
};
// Lane `lane`'s columns of dx = residual + rstd * (dy*gamma - x * rstd^2 * mean(dy*gamma*x)).
PIPETTE_HD inline void RmsNormInputGradLane(int lane, const float* g, const float* xr,
                                            const float* gamma, int cols, float rstd, double dot,
                                            const float* residual, float* out) {
  const float k = static_cast<float>(dot / cols) * rstd * rstd;
  for (int c = lane; c < cols; c += kRowThreads) {
    const float v = rstd * (g[c] * gamma[c] - xr[c] * k);
    out[c] = residual != nullptr ? residual[c] + v : v;
  }
}

// Row r of the fused LayerNorm forward as its block computes it (the host path):
// y = (x - mean) * rstd * gamma + beta; mean[r], rstd[r].
inline void LayerNormForwardBlock(std::int64_t r, const float* x, const float* gamma,
                                  const float* beta, int cols, float* y, float* mean, float* rstd) {
  const float* xr = x + r * cols;
  double v[kRowThreads];
  for (int l = 0; l < kRowThreads; ++l) v[l] = LaneSum(l, cols, RowValues{xr});
  const double sum = BlockReduceModel(v, 0.0, SumOp{});
  for (int l = 0; l < kRowThreads; ++l) {
    v[l] = LaneSum(l, cols, RowSquaredDeviation{xr, sum / cols});
  }
  const NormStats s = LayerNormStatsOf(sum, BlockReduceModel(v, 0.0, SumOp{}), cols);
  for (int l = 0; l < kRowThreads; ++l)
    LayerNormOutputLane(l, xr, gamma, beta, cols, s, y + r * cols);
  mean[r] = s.mean;
  rstd[r] = s.rstd;
}

// Row r of dx = residual + the LayerNorm input gradient for dy, as its block computes it.
inline void LayerNormInputGradBlock(std::int64_t r, const float* dy, const float* x,
                                    const float* mean, const float* rstd, const float* gamma,
                                    const float* residual, int cols, float* dx) {
  const std::int64_t at = r * cols;
  const NormStats s{mean[r], rstd[r]};
  double v[kRowThreads];
  for (int l = 0; l < kRowThreads; ++l) v[l] = LaneSum(l, cols, LayerNormGradSum{dy + at, gamma});
  const double sum = BlockReduceModel(v, 0.0, SumOp{});
  for (int l = 0; l < kRowThreads; ++l) {
    v[l] = LaneSum(l, cols, LayerNormGradDot{dy + at, gamma, x + at, s});
  }
  const double dot = BlockReduceModel(v, 0.0, SumOp{});
  for (int l = 0; l < kRowThreads; ++l) {
    LayerNormInputGradLane(l, dy + at, x + at, gamma, cols, s, sum, dot,
                           residual != nullptr ? residual + at : nullptr, dx + at);
  }
}

// Row r of RMSNorm (y, rstd[r]) as its block computes it.
inline void RmsNormForwardBlock(std::int64_t r, const float* x, const float* gamma, int cols,
                                float* y, float* rstd) {
  const float* xr = x + r * cols;
  double v[kRowThreads];
  for (int l = 0; l < kRowThreads; ++l) v[l] = LaneSum(l, cols, RowSquares{xr});
  const float s = RmsNormRstdOf(BlockReduceModel(v, 0.0, SumOp{}), cols);
  for (int l = 0; l < kRowThreads; ++l) RmsNormOutputLane(l, xr, gamma, cols, s, y + r * cols);
  rstd[r] = s;
}

// Row r of dx = residual + the RMSNorm input gradient for dy, as its block computes it.
inline void RmsNormInputGradBlock(std::int64_t r, const float* dy, const float* x,
                                  const float* rstd, const float* gamma, const float* residual,
                                  int cols, float* dx) {
  const std::int64_t at = r * cols;
  double v[kRowThreads];
  for (int l = 0; l < kRowThreads; ++l)
    v[l] = LaneSum(l, cols, RmsNormGradDot{dy + at, gamma, x + at});
  const double dot = BlockReduceModel(v, 0.0, SumOp{});
  for (int l = 0; l < kRowThreads; ++l) {
    RmsNormInputGradLane(l, dy + at, x + at, gamma, cols, rstd[r], dot,
                         residual != nullptr ? residual + at : nullptr, dx + at);
  }
}

// ---- column sums (weight and bias gradients) --------------------------------------------------
//
// Two deterministic passes, no atomics. Pass 1: a block of kColTile x kColLanes threads per
// (tile of kColTile columns, chunk of kColChunkRows rows); thread (x, y) adds the rows y,
// y + kColLanes, ... of its chunk for column tile*kColTile + x (a warp reads 32 consecutive
// columns of one row), then the block halves its kColLanes partials per column (HalvingTree) into
// partials[(k * chunks + chunk) * cols + c] for each of the term's kOut sums k. Pass 2: one thread
// per column adds the chunks' partials in chunk order and adds the total into the gradient.
// A term is a struct with kOut and Add(i, r, acc): acc[k] += its k-th value at element i, row r.
constexpr int kColTile = 32;
constexpr int kColLanes = 8;
constexpr int kColChunkRows = 64;

PIPETTE_HD inline int ColChunks(int rows) { return (rows + kColChunkRows - 1) / kColChunkRows; }

struct BiasTerms {  // dbias += dy
  static constexpr int kOut = 1;
  const float* dy;
  PIPETTE_HD void Add(std::int64_t i, int, float* acc) const { acc[0] += dy[i]; }
};
struct AffineTerms {  // dgamma += dy * xhat, dbeta += dy; xhat from x and the row's stats
  static constexpr int kOut = 2;
  const float* dy;
  const float* x;
  const float* mean;
  const float* rstd;
  PIPETTE_HD void Add(std::int64_t i, int r, float* acc) const {
    acc[0] += dy[i] * Xhat(x[i], NormStats{mean[r], rstd[r]});
    acc[1] += dy[i];
  }
};
struct RmsNormTerms {  // dgamma += dy * x * rstd
  static constexpr int kOut = 1;
  const float* dy;
  const float* x;
  const float* rstd;
  PIPETTE_HD void Add(std::int64_t i, int r, float* acc) const {
    acc[0] += dy[i] * (x[i] * rstd[r]);
  }
};

// Thread (lane, column c) of chunk `chunk` in pass 1: acc[k] (zeroed here) = its rows' sums.
template <class Terms>
PIPETTE_HD void ColLaneSum(const Terms& t, int chunk, int lane, int c, int rows, int cols,
                           float* acc) {
  for (int k = 0; k < Terms::kOut; ++k) acc[k] = 0.0f;
  const int end =
      chunk * kColChunkRows + kColChunkRows < rows ? chunk * kColChunkRows + kColChunkRows : rows;
  for (int r = chunk * kColChunkRows + lane; r < end; r += kColLanes) {
    t.Add(static_cast<std::int64_t>(r) * cols + c, r, acc);
  }
}

// Pass 2, column c: out[k][c] += the chunks' partials of sum k, in chunk order.
PIPETTE_HD inline void ColFinish(std::int64_t c, const float* partials, int chunks, int cols,
                                 int outs, float* out0, float* out1) {
  for (int k = 0; k < outs; ++k) {
    float sum = 0.0f;
    for (int chunk = 0; chunk < chunks; ++chunk) {
      sum += partials[(static_cast<std::int64_t>(k) * chunks + chunk) * cols + c];
    }
    float* out = k == 0 ? out0 : out1;
    out[c] += sum;
  }
}

struct FloatSumOp {
  PIPETTE_HD float operator()(float a, float b) const { return a + b; }
};

// Both passes on the host, as the two launches compute them: out0 (and out1) += the column sums.
template <class Terms>
void ColReduceModel(const Terms& t, int rows, int cols, float* out0, float* out1) {
  const int chunks = ColChunks(rows);
  float* partials = new float[static_cast<std::size_t>(Terms::kOut) * chunks * cols + 1];
  for (int chunk = 0; chunk < chunks; ++chunk) {
    for (int c = 0; c < cols; ++c) {
      float lanes[Terms::kOut][kColLanes];
      for (int l = 0; l < kColLanes; ++l) {
        float acc[Terms::kOut];
        ColLaneSum(t, chunk, l, c, rows, cols, acc);
        for (int k = 0; k < Terms::kOut; ++k) lanes[k][l] = acc[k];
      }
      for (int k = 0; k < Terms::kOut; ++k) {
        partials[(static_cast<std::int64_t>(k) * chunks + chunk) * cols + c] =
            HalvingTree(lanes[k], kColLanes, FloatSumOp{});
      }
    }
  }
  for (int c = 0; c < cols; ++c) ColFinish(c, partials, chunks, cols, Terms::kOut, out0, out1);
  delete[] partials;
}

// ---- activations ------------------------------------------------------------------------------

// gelu(x) = x * (1 + tanh(u)) / 2, u = c (x + a x^3), computed as x * sigmoid(2u) (as the CPU).
PIPETTE_HD inline void GeluAt(std::int64_t i, const float* x, float* y) {
  const float v = x[i];
  const float u = kGeluC * (v + kGeluA * v * v * v);
  y[i] = v / (1.0f + expf(-2.0f * u));
}

// Past |x| = 20 the derivative is 1 or 0 to float precision (s (1 - s) is 0), and du would be
// infinite from |x| = 1.8e19, making 0 * inf = NaN: x is held to [-20, 20] as the CPU engine's
// std::clamp holds it, a NaN passing through (fminf/fmaxf would turn it into a bound).
PIPETTE_HD inline void GeluInputGradAt(std::int64_t i, const float* dy, const float* x, float* dx) {
  const float v = x[i] < -20.0f ? -20.0f : (x[i] > 20.0f ? 20.0f : x[i]);
  const float u = kGeluC * (v + kGeluA * v * v * v);
  const float s = 1.0f / (1.0f + expf(-2.0f * u));  // (1 + tanh u) / 2
  const float du = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
  dx[i] = dy[i] * (s + v * 2.0f * s * (1.0f - s) * du);
}

// Output element i (of rows x f) of y = silu(gate) * up; gate_up rows are [gate | up], 2f wide.
PIPETTE_HD inline void SwiGluAt(std::int64_t i, const float* gate_up, int f, float* y) {
  const std::int64_t r = i / f;
  const float* gr = gate_up + r * 2 * f + (i - r * f);
  const float a = gr[0];
  y[i] = a / (1.0f + expf(-a)) * gr[f];
}

// Output element i (of rows x f): writes both d gate and d up of that element into dgate_up.
// d silu(a) / da = sig(a) (1 + a (1 - sig(a))).
PIPETTE_HD inline void SwiGluInputGradAt(std::int64_t i, const float* dy, const float* gate_up,
                                         int f, float* dgate_up) {
  const std::int64_t r = i / f, at = r * 2 * f + (i - r * f);
  const float a = gate_up[at], up = gate_up[at + f];
  const float sig = 1.0f / (1.0f + expf(-a));
  const float silu = a / (1.0f + expf(-a));
  dgate_up[at] = dy[i] * up * sig * (1.0f + a * (1.0f - sig));
  dgate_up[at + f] = dy[i] * silu;
}

// ---- attention --------------------------------------------------------------------------------

// kernels::AttentionShape without CUDA headers (kernels.cu converts).
struct AttnDims {
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  PIPETTE_HD int qkv_cols() const { return (heads + 2 * kv_heads) * head_dim; }
  PIPETTE_HD int out_cols() const { return heads * head_dim; }
  PIPETTE_HD int group() const { return heads / kv_heads; }  // query heads per kv head
  PIPETTE_HD float scale() const { return 1.0f / sqrtf(static_cast<float>(head_dim)); }
};

// RoPE, one thread per rotated pair: i over batch*seq rows x (heads + kv_heads) q and k heads x
// head_dim/2 pairs. Pair (p, p + d/2) of a head at position t = row % seq rotates by
// t * theta^(-2p/d), by the inverse angle when `inverse` (the gradient). Angle, sine and cosine
// in double: positions reach thousands, where a float angle is off by ~1e-3 rad.
PIPETTE_HD inline void RopeAt(std::int64_t i, float* qkv, AttnDims s, float theta, bool inverse) {
  const int half = s.head_dim / 2, heads = s.heads + s.kv_heads;
  const int p = static_cast<int>(i % half);
  const int head = static_cast<int>((i / half) % heads);  // q heads, then k heads: contiguous
  const std::int64_t row = i / (static_cast<std::int64_t>(half) * heads);
  const int t = static_cast<int>(row % s.seq);
  const double angle = t * pow(static_cast<double>(theta), -2.0 * p / s.head_dim);
  const double cs = cos(angle), sn = inverse ? -sin(angle) : sin(angle);
  float* x = qkv + row * s.qkv_cols() + static_cast<std::int64_t>(head) * s.head_dim + p;
  const double x0 = x[0], x1 = x[half];
  x[0] = static_cast<float>(x0 * cs - x1 * sn);
  x[half] = static_cast<float>(x1 * cs + x0 * sn);
}

// Where one head's vector of one token sits: token `token` (a row of batch*seq), column `col`.
PIPETTE_HD inline std::int64_t AttnAt(std::int64_t token, int ld, int col) {
  return token * ld + col;
}

PIPETTE_HD inline float Dot(const float* a, const float* b, int n) {
  float sum = 0;
  for (int t = 0; t < n; ++t) sum += a[t] * b[t];
  return sum;
}

// Attention forward, one thread per (sequence b, query head j, query row r), i = (b*heads+j)*seq+r:
// online softmax over the keys 0..r, the output row written in place (it is the accumulator), and
// lse[i] = log sum_c exp(scale q.k_c).
PIPETTE_HD inline void AttentionForwardAt(std::int64_t i, const float* qkv, AttnDims s, float* out,
                                          float* lse) {
  const int r = static_cast<int>(i % s.seq), j = static_cast<int>((i / s.seq) % s.heads);
  const std::int64_t row0 = i / (static_cast<std::int64_t>(s.seq) * s.heads) * s.seq;
  const int d = s.head_dim, ld = s.qkv_cols(), kv = j / s.group();
  const float* q = qkv + AttnAt(row0 + r, ld, j * d);
  const float* k0 = qkv + AttnAt(row0, ld, (s.heads + kv) * d);
  const float* v0 = qkv + AttnAt(row0, ld, (s.heads + s.kv_heads + kv) * d);
  float* o = out + AttnAt(row0 + r, s.out_cols(), j * d);
  const float scale = s.scale();
  float mx = scale * Dot(q, k0, d), sum = 1.0f;  // key 0 is always visible
  for (int t = 0; t < d; ++t) o[t] = v0[t];
  for (int c = 1; c <= r; ++c) {
    const std::int64_t at = static_cast<std::int64_t>(c) * ld;
    const float score = scale * Dot(q, k0 + at, d);
    const float next = fmaxf(mx, score);
    const float rescale = expf(mx - next), p = expf(score - next);
    sum = sum * rescale + p;
    for (int t = 0; t < d; ++t) o[t] = o[t] * rescale + p * v0[at + t];
    mx = next;
  }
  const float inv = 1.0f / sum;
  for (int t = 0; t < d; ++t) o[t] *= inv;
  lse[i] = mx + logf(sum);
}

// The backward's first pass, one thread per (b, j, r) as the forward: delta = dout_row . out_row
// (= rowsum(P * dP)).
PIPETTE_HD inline void AttentionDeltaAt(std::int64_t i, const float* dout, const float* out,
                                        AttnDims s, float* delta) {
  const int r = static_cast<int>(i % s.seq), j = static_cast<int>((i / s.seq) % s.heads);
  const std::int64_t row0 = i / (static_cast<std::int64_t>(s.seq) * s.heads) * s.seq;
  const std::int64_t at = AttnAt(row0 + r, s.out_cols(), j * s.head_dim);
  delta[i] = Dot(dout + at, out + at, s.head_dim);
}

// dq of query row r of head j, one thread per (b, j, r) as the forward; overwrites the q columns
// of dqkv: dq = scale * sum_c p_c (dout.v_c - delta) k_c, p_c = exp(scale q.k_c - lse).
PIPETTE_HD inline void AttentionDqAt(std::int64_t i, const float* dout, const float* qkv,
                                     const float* lse, const float* delta, AttnDims s,
                                     float* dqkv) {
  const int r = static_cast<int>(i % s.seq), j = static_cast<int>((i / s.seq) % s.heads);
  const std::int64_t row0 = i / (static_cast<std::int64_t>(s.seq) * s.heads) * s.seq;
  const int d = s.head_dim, ld = s.qkv_cols(), kv = j / s.group();
  const float* q = qkv + AttnAt(row0 + r, ld, j * d);
  const float* g = dout + AttnAt(row0 + r, s.out_cols(), j * d);
  const float* k0 = qkv + AttnAt(row0, ld, (s.heads + kv) * d);
  const float* v0 = qkv + AttnAt(row0, ld, (s.heads + s.kv_heads + kv) * d);
  float* dq = dqkv + AttnAt(row0 + r, ld, j * d);
  const float scale = s.scale();
  for (int t = 0; t < d; ++t) dq[t] = 0.0f;
  for (int c = 0; c <= r; ++c) {
    const std::int64_t at = static_cast<std::int64_t>(c) * ld;
    const float p = expf(scale * Dot(q, k0 + at, d) - lse[i]);
    const float ds = p * (Dot(g, v0 + at, d) - delta[i]);
    for (int t = 0; t < d; ++t) dq[t] += scale * ds * k0[at + t];
  }
}

// dk and dv of key row c of kv head g, one thread per (b, g, c), i = (b*kv_heads+g)*seq+c; loops
// over the query heads of g's group and the query rows r >= c; overwrites the k and v columns.
PIPETTE_HD inline void AttentionDkvAt(std::int64_t i, const float* dout, const float* qkv,
                                      const float* lse, const float* delta, AttnDims s,
                                      float* dqkv) {
  const int c = static_cast<int>(i % s.seq), g = static_cast<int>((i / s.seq) % s.kv_heads);
  const std::int64_t b = i / (static_cast<std::int64_t>(s.seq) * s.kv_heads), row0 = b * s.seq;
  const int d = s.head_dim, ld = s.qkv_cols(), oc = s.out_cols();
  const float* k = qkv + AttnAt(row0 + c, ld, (s.heads + g) * d);
  const float* v = qkv + AttnAt(row0 + c, ld, (s.heads + s.kv_heads + g) * d);
  float* dk = dqkv + AttnAt(row0 + c, ld, (s.heads + g) * d);
  float* dv = dqkv + AttnAt(row0 + c, ld, (s.heads + s.kv_heads + g) * d);
  const float scale = s.scale();
  for (int t = 0; t < d; ++t) dk[t] = dv[t] = 0.0f;
  for (int j = g * s.group(); j < (g + 1) * s.group(); ++j) {
    for (int r = c; r < s.seq; ++r) {
      const float* q = qkv + AttnAt(row0 + r, ld, j * d);
      const float* go = dout + AttnAt(row0 + r, oc, j * d);
      const std::int64_t li = (b * s.heads + j) * s.seq + r;
      const float p = expf(scale * Dot(q, k, d) - lse[li]);
      const float ds = p * (Dot(go, v, d) - delta[li]);
      for (int t = 0; t < d; ++t) {
        dv[t] += p * go[t];
        dk[t] += scale * ds * q[t];
      }
    }
  }
}

// ---- embedding --------------------------------------------------------------------------------

// Element i of y (tokens x hidden): wte[tokens[t]] (+ wpe[t % seq] when wpe is not null).
PIPETTE_HD inline void EmbeddingAt(std::int64_t i, const std::int32_t* tokens, const float* wte,
                                   const float* wpe, int seq, int hidden, float* y) {
  const std::int64_t t = i / hidden;
  const int c = static_cast<int>(i - t * hidden);
  const float e = wte[static_cast<std::int64_t>(tokens[t]) * hidden + c];
  y[i] = wpe == nullptr ? e : e + wpe[(t % seq) * hidden + c];
}

// The embedding gradient without atomics, first pass, one thread per token t of n: next[t] = the
// next token position with the same id (-1 if none) and leader[t] = 1 when no earlier position
// has it. Each id's positions then form one chain, walked by its leader in order.
PIPETTE_HD inline void EmbeddingChainAt(std::int64_t t, const std::int32_t* tokens, std::int64_t n,
                                        std::int32_t* next, std::int32_t* leader) {
  const std::int32_t id = tokens[t];
  std::int32_t after = -1;
  for (std::int64_t u = t + 1; u < n && after < 0; ++u) {
    if (tokens[u] == id) after = static_cast<std::int32_t>(u);
  }
  std::int32_t first = 1;
  for (std::int64_t u = 0; u < t && first; ++u) first = tokens[u] != id;
  next[t] = after;
  leader[t] = first;
}

// Second pass, one thread per (token t, column c), i = t * hidden + c: a leader adds dy[u][c] of
// every position u of its chain, in position order (the CPU engine's order), to dwte[id][c].
PIPETTE_HD inline void EmbeddingWteGradAt(std::int64_t i, const float* dy,
                                          const std::int32_t* tokens, int hidden,
                                          const std::int32_t* next, const std::int32_t* leader,
                                          float* dwte) {
  const std::int64_t t = i / hidden;
  if (!leader[t]) return;
  const int c = static_cast<int>(i - t * hidden);
  float* out = dwte + static_cast<std::int64_t>(tokens[t]) * hidden + c;
  float sum = *out;
  for (std::int64_t u = t; u >= 0; u = next[u]) sum += dy[u * hidden + c];
  *out = sum;
}

// dwpe, one thread per (position p < seq, column c), i = p * hidden + c: adds dy of position p of
// every sequence, in order.
PIPETTE_HD inline void EmbeddingWpeGradAt(std::int64_t i, const float* dy, int batch, int seq,
                                          int hidden, float* dwpe) {
  const std::int64_t stride = static_cast<std::int64_t>(seq) * hidden;
  float sum = dwpe[i];
  for (int b = 0; b < batch; ++b) sum += dy[b * stride + i];
  dwpe[i] = sum;
}

// The bf16 bits of x rounded to nearest even (NaN -> 0x7fff, as CUDA's __float2bfloat16_rn;
// values past the largest bf16 round to infinity).
PIPETTE_HD inline std::uint16_t Bf16Bits(float x) {
  std::uint32_t u;
#if defined(__CUDA_ARCH__)
  u = __float_as_uint(x);
#else
  std::memcpy(&u, &x, sizeof u);
#endif
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// Lane `lane`'s columns of a row's bf16 bits: a row kernel rounding its own output (y, cols wide)
// for the bf16 GEMMs that read it, so no separate rounding pass reads it again.
PIPETTE_HD inline void Bf16Lane(int lane, const float* y, int cols, std::uint16_t* y_bf16) {
  for (int c = lane; c < cols; c += kRowThreads) y_bf16[c] = Bf16Bits(y[c]);
}

// ---- loss -------------------------------------------------------------------------------------
//
// Cross-entropy, one block per row: each lane runs an online softmax over its columns (a running
// max and the sum of exp(z - max) in double, rescaled when the max grows), the block merges the
// lanes' (max, sum) pairs by the fixed tree, then the row's loss and, in a second pass over the
// row, the gradient (softmax - onehot) * scale, in place if asked: the loss module's forward
// leaves dlogits where the logits were. p_c = float(exp(z_c - max)) * float(1 / sum) and the
// 1e-30 clamp are the CPU engine's Loss module's.
struct OnlineSoftmax {
  float max;
  double sum;  // of exp(z - max)
};
struct SoftmaxMergeOp {
  PIPETTE_HD OnlineSoftmax operator()(OnlineSoftmax a, OnlineSoftmax b) const {
    const float m = fmaxf(a.max, b.max);
    if (a.sum == 0.0) return b;  // a lane with no columns
    if (b.sum == 0.0) return a;
    return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
  }
};
PIPETTE_HD inline OnlineSoftmax EmptySoftmax() { return {-INFINITY, 0.0}; }

// Lane `lane`'s online softmax over its columns of row z.
PIPETTE_HD inline OnlineSoftmax SoftmaxLane(int lane, const float* z, int vocab) {
  OnlineSoftmax s = EmptySoftmax();
  for (int c = lane; c < vocab; c += kRowThreads) {
    if (z[c] > s.max) {
      s.sum = s.sum == 0.0 ? 0.0 : s.sum * expf(s.max - z[c]);
      s.max = z[c];
    }
    s.sum += expf(z[c] - s.max);
  }
  return s;
}

// -log(max(p_target, 1e-30)) of a row, from its merged softmax and its target's logit.
PIPETTE_HD inline float CrossEntropyLossOf(OnlineSoftmax s, float target_logit) {
  const float p = expf(target_logit - s.max) * static_cast<float>(1.0 / s.sum);
  return static_cast<float>(-log(fmax(static_cast<double>(p), 1e-30)));
}

// Lane `lane`'s columns of dlogits = (softmax - onehot(target)) * scale (dlogits may alias z),
// and their bf16 bits into g_bf16 when it is not null (what a bf16 GEMM reads: no rounding pass).
// The row's padding, columns vocab to ld - 1 (the engine pads its logits' rows, model.h's
// LogitsCols), gets zeros in both.
PIPETTE_HD inline void CrossEntropyGradLane(int lane, const float* z, int vocab, int ld, int target,
                                            OnlineSoftmax s, float scale, float* g,
                                            std::uint16_t* g_bf16) {
  const float inv = static_cast<float>(1.0 / s.sum);
  for (int c = lane; c < vocab; c += kRowThreads) {
    float p = expf(z[c] - s.max) * inv;
    if (c == target) p -= 1.0f;
    g[c] = p * scale;
    if (g_bf16 != nullptr) g_bf16[c] = Bf16Bits(g[c]);
  }
  for (int c = vocab + lane; c < ld; c += kRowThreads) {
    g[c] = 0.0f;
    if (g_bf16 != nullptr) g_bf16[c] = 0;
  }
}

// Row r as its block computes it: row_loss[r]; dlogits too when not null (may alias logits), and
// its bf16 bits when dlogits_bf16 is not null. Rows are `ld` >= vocab floats apart; the columns
// past the vocabulary are never read.
inline void CrossEntropyBlock(std::int64_t r, const float* logits, const std::int32_t* targets,
                              int vocab, int ld, float scale, float* row_loss, float* dlogits,
                              std::uint16_t* dlogits_bf16 = nullptr) {
  const float* z = logits + r * ld;
  OnlineSoftmax v[kRowThreads];
  for (int l = 0; l < kRowThreads; ++l) v[l] = SoftmaxLane(l, z, vocab);
  const OnlineSoftmax s = BlockReduceModel(v, EmptySoftmax(), SoftmaxMergeOp{});
  row_loss[r] = CrossEntropyLossOf(s, z[targets[r]]);
  if (dlogits == nullptr) return;
  for (int l = 0; l < kRowThreads; ++l) {
    CrossEntropyGradLane(l, z, vocab, ld, targets[r], s, scale, dlogits + r * ld,
                         dlogits_bf16 != nullptr ? dlogits_bf16 + r * ld : nullptr);
  }
}

// ---- elementwise ------------------------------------------------------------------------------

PIPETTE_HD inline void AddBiasAt(std::int64_t i, const float* bias, int cols, float* y) {
  y[i] += bias[i % cols];
}

PIPETTE_HD inline void AddAt(std::int64_t i, const float* a, const float* b, float* y) {
  y[i] = a[i] + b[i];
}

PIPETTE_HD inline void AxpyAt(std::int64_t i, float alpha, const float* x, float* y) {
  y[i] += alpha * x[i];
}

// Sum of n values by kSumThreads threads of one block: thread i sums x[i], x[i + kSumThreads], ...
// in double (SumPartialAt), then one thread adds the partials in index order (SumOfPartials).
constexpr int kSumThreads = 256;
PIPETTE_HD inline double SumPartialAt(int i, const float* x, std::int64_t n) {
  double sum = 0;
  for (std::int64_t k = i; k < n; k += kSumThreads) sum += x[k];
  return sum;
}
PIPETTE_HD inline float SumOfPartials(const double* partials) {
  double sum = 0;
  for (int i = 0; i < kSumThreads; ++i) sum += partials[i];
  return static_cast<float>(sum);
}
// A microbatch's loss from the sum of its n row losses: float(sum) / n, as the CPU engine.
PIPETTE_HD inline float MeanOf(float sum, std::int64_t n) { return sum / static_cast<float>(n); }

// ---- optimizer --------------------------------------------------------------------------------

// One tensor of a multi-tensor AdamW step: its elements are the launch's indices
// [begin, begin + n).
struct AdamWSlice {
  float* param = nullptr;
  const float* grad = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  std::int64_t begin = 0;
  std::int64_t n = 0;
  int decay = 0;  // 1: decoupled weight decay applies
};

// What ParamSet::Step derives from the config and the step once per step.
struct AdamWScalars {
  double lr, eps;
  double c1, c2;  // bias corrections 1 - beta^step
  float b1, b2;
  float decay;  // float(lr * weight_decay)
};
inline AdamWScalars MakeAdamWScalars(double lr, double beta1, double beta2, double eps,
                                     double weight_decay, int step) {
  return {lr,
          eps,
          1.0 - pow(beta1, step),
          1.0 - pow(beta2, step),
          static_cast<float>(beta1),
          static_cast<float>(beta2),
          static_cast<float>(lr * weight_decay)};
}

// Element j of one tensor, ParamSet::Step's formula.
PIPETTE_HD inline void AdamWElement(const AdamWSlice& t, std::int64_t j, const AdamWScalars& s) {
  const float decay = t.decay ? s.decay : 0.0f;
  const float g = t.grad[j];
  t.m[j] = s.b1 * t.m[j] + (1 - s.b1) * g;
  t.v[j] = s.b2 * t.v[j] + (1 - s.b2) * g * g;
  const double mhat = t.m[j] / s.c1, vhat = t.v[j] / s.c2;
  t.param[j] -= decay * t.param[j] + static_cast<float>(s.lr * mhat / (sqrt(vhat) + s.eps));
}

// The tensor holding launch index i: the last slice with begin <= i (binary search; empty slices
// are skipped because a later slice has the same begin).
PIPETTE_HD inline int FindSlice(const AdamWSlice* slices, int count, std::int64_t i) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (slices[mid].begin <= i) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Launch index i over the concatenation of every slice.
PIPETTE_HD inline void AdamWAt(std::int64_t i, const AdamWSlice* slices, int count,
                               const AdamWScalars& s) {
  const AdamWSlice& t = slices[FindSlice(slices, count, i)];
  AdamWElement(t, i - t.begin, s);
}

}  // namespace pipette::cuda::math
