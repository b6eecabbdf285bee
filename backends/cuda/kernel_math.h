// The per-thread work of every kernel in kernels.h, as plain inline functions compiled for the
// device (under nvcc, `__host__ __device__`) and for the host (under g++, ordinary C++ with no CUDA
// header). kernels.cu's `__global__` wrappers map a thread index to one of these calls; the host
// tests (tests/cuda/kernel_math_test.cc) call them over every index on the CPU and compare with the
// CPU engine, so the math is checked where there is no GPU.
//
// Threading, and therefore what an index means, is part of each function's contract:
//   ...At(i, ...)      one thread per element (or per output element / pair, as stated)
//   ...Row(r, ...)     one thread per row (row reductions: norms, cross-entropy)
//   ...Col(c, ...)     one thread per column (column sums: weight and bias gradients)
// Every function writes only the outputs its own index owns, so a launch needs no atomics and its
// result does not depend on the order threads run in (deterministic). Formulas follow the CPU
// engine's kernels (backends/cpu/tensor.h, the Loss module in gpt.cc, ParamSet::Step) operation
// for operation, including where they accumulate in double.
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

// ---- norms ------------------------------------------------------------------------------------

// Row r of LayerNorm without the affine part (xhat, rstd), as cpu::LayerNormForward.
PIPETTE_HD inline void LayerNormForwardRow(std::int64_t r, const float* x, int cols, float* xhat,
                                           float* rstd) {
  const float* xr = x + r * cols;
  double mean = 0;
  for (int c = 0; c < cols; ++c) mean += xr[c];
  mean /= cols;
  double var = 0;
  for (int c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
  var /= cols;
  const float s = static_cast<float>(1.0 / sqrt(var + kNormEps));
  const float mu = static_cast<float>(mean);
  float* hr = xhat + r * cols;
  for (int c = 0; c < cols; ++c) hr[c] = (xr[c] - mu) * s;
  rstd[r] = s;
}

// Element i of y = xhat * gamma + beta.
PIPETTE_HD inline void AffineAt(std::int64_t i, const float* xhat, const float* gamma,
                                const float* beta, int cols, float* y) {
  const int c = static_cast<int>(i % cols);
  y[i] = xhat[i] * gamma[c] + beta[c];
}

// Row r of the LayerNorm input gradient, as cpu::LayerNormInputGrad.
PIPETTE_HD inline void LayerNormInputGradRow(std::int64_t r, const float* dy, const float* xhat,
                                             const float* rstd, const float* gamma, int cols,
                                             float* dx, bool accumulate) {
  const float* g = dy + r * cols;
  const float* h = xhat + r * cols;
  double sum = 0, dot = 0;  // of dxhat = dy * gamma, and of dxhat * xhat
  for (int c = 0; c < cols; ++c) {
    const double d = static_cast<double>(g[c]) * gamma[c];
    sum += d;
    dot += d * h[c];
  }
  const float mean = static_cast<float>(sum / cols);
  const float mean_dot = static_cast<float>(dot / cols);
  float* out = dx + r * cols;
  for (int c = 0; c < cols; ++c) {
    const float v = rstd[r] * (g[c] * gamma[c] - mean - h[c] * mean_dot);
    out[c] = accumulate ? out[c] + v : v;
  }
}

// Column c of dgamma += sum_r dy * xhat, dbeta += sum_r dy (rows in order, as the CPU engine).
PIPETTE_HD inline void AffineWeightGradCol(std::int64_t c, const float* dy, const float* xhat,
                                           int rows, int cols, float* dgamma, float* dbeta) {
  float dg = dgamma[c], db = dbeta[c];
  for (int r = 0; r < rows; ++r) {
    const std::int64_t i = static_cast<std::int64_t>(r) * cols + c;
    dg += dy[i] * xhat[i];
    db += dy[i];
  }
  dgamma[c] = dg;
  dbeta[c] = db;
}

// Row r of RMSNorm: rstd = 1/sqrt(mean(x^2) + eps), y = x * rstd * gamma.
PIPETTE_HD inline void RmsNormForwardRow(std::int64_t r, const float* x, const float* gamma,
                                         int cols, float* y, float* rstd) {
  const float* xr = x + r * cols;
  double squares = 0;
  for (int c = 0; c < cols; ++c) squares += static_cast<double>(xr[c]) * xr[c];
  const float s = static_cast<float>(1.0 / sqrt(squares / cols + kNormEps));
  float* yr = y + r * cols;
  for (int c = 0; c < cols; ++c) yr[c] = xr[c] * s * gamma[c];
  rstd[r] = s;
}

// Row r of the RMSNorm input gradient: dx = rstd * (dy*gamma - x * rstd^2 * mean(dy*gamma*x)).
PIPETTE_HD inline void RmsNormInputGradRow(std::int64_t r, const float* dy, const float* x,
                                           const float* rstd, const float* gamma, int cols,
                                           float* dx, bool accumulate) {
  const float* g = dy + r * cols;
  const float* xr = x + r * cols;
  double dot = 0;
  for (int c = 0; c < cols; ++c) dot += static_cast<double>(g[c]) * gamma[c] * xr[c];
  const float s = rstd[r];
  const float k = static_cast<float>(dot / cols) * s * s;
  float* out = dx + r * cols;
  for (int c = 0; c < cols; ++c) {
    const float v = s * (g[c] * gamma[c] - xr[c] * k);
    out[c] = accumulate ? out[c] + v : v;
  }
}

// Column c of dgamma += sum_r dy * x * rstd (rows in order).
PIPETTE_HD inline void RmsNormWeightGradCol(std::int64_t c, const float* dy, const float* x,
                                            const float* rstd, int rows, int cols, float* dgamma) {
  float dg = dgamma[c];
  for (int r = 0; r < rows; ++r) {
    const std::int64_t i = static_cast<std::int64_t>(r) * cols + c;
    dg += dy[i] * (x[i] * rstd[r]);
  }
  dgamma[c] = dg;
}

// ---- activations ------------------------------------------------------------------------------

// gelu(x) = x * (1 + tanh(u)) / 2, u = c (x + a x^3), computed as x * sigmoid(2u) (as the CPU).
PIPETTE_HD inline void GeluAt(std::int64_t i, const float* x, float* y) {
  const float v = x[i];
  const float u = kGeluC * (v + kGeluA * v * v * v);
  y[i] = v / (1.0f + expf(-2.0f * u));
}

PIPETTE_HD inline void GeluInputGradAt(std::int64_t i, const float* dy, const float* x, float* dx) {
  const float v = x[i];
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

// ---- loss -------------------------------------------------------------------------------------

// A row's softmax as the CPU engine's Loss computes it: p_c = float(exp(z_c - max)) * inv.
struct SoftmaxRow {
  float max;
  float inv;  // 1 / sum_c exp(z_c - max), the sum in double
};
PIPETTE_HD inline SoftmaxRow SoftmaxOf(const float* z, int vocab) {
  float mx = z[0];
  for (int c = 1; c < vocab; ++c) mx = fmaxf(mx, z[c]);
  double sum = 0;
  for (int c = 0; c < vocab; ++c) sum += expf(z[c] - mx);
  return {mx, static_cast<float>(1.0 / sum)};
}

// row_loss[r] = -log(max(p_target, 1e-30)).
PIPETTE_HD inline void CrossEntropyRow(std::int64_t r, const float* logits,
                                       const std::int32_t* targets, int vocab, float* row_loss) {
  const float* z = logits + r * vocab;
  const SoftmaxRow s = SoftmaxOf(z, vocab);
  const float p = expf(z[targets[r]] - s.max) * s.inv;
  row_loss[r] = static_cast<float>(-log(fmax(static_cast<double>(p), 1e-30)));
}

// Row r of dlogits = (softmax - onehot(target)) * scale. dlogits may alias logits: each element is
// read before it is written, by this thread only.
PIPETTE_HD inline void CrossEntropyInputGradRow(std::int64_t r, const float* logits,
                                                const std::int32_t* targets, int vocab, float scale,
                                                float* dlogits) {
  const float* z = logits + r * vocab;
  const SoftmaxRow s = SoftmaxOf(z, vocab);
  const int target = targets[r];
  float* g = dlogits + r * vocab;
  for (int c = 0; c < vocab; ++c) {
    float p = expf(z[c] - s.max) * s.inv;
    if (c == target) p -= 1.0f;
    g[c] = p * scale;
  }
}

// ---- elementwise ------------------------------------------------------------------------------

PIPETTE_HD inline void AddBiasAt(std::int64_t i, const float* bias, int cols, float* y) {
  y[i] += bias[i % cols];
}

// Column c of dbias += sum_r dy (rows in order).
PIPETTE_HD inline void BiasGradCol(std::int64_t c, const float* dy, int rows, int cols,
                                   float* dbias) {
  float sum = dbias[c];
  for (int r = 0; r < rows; ++r) sum += dy[static_cast<std::int64_t>(r) * cols + c];
  dbias[c] = sum;
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
