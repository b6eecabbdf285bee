// The tiled (FlashAttention-2) algorithm of the bf16 attention kernels (flash_attention.h), written
// once for the device and the host. The loops over tiles, the online-softmax rescaling, the causal
// mask, the grouped-query mapping and the backward's recompute from the log-sum-exp live in the
// block functions below, templated on an `Ops` type that supplies the tile products and the
// threading: flash_attention.cu's ops run the products on tensor cores (WMMA, bf16 operands, fp32
// accumulators) with a warp per 16-row strip; HostTileOps below runs them as plain loops, one
// strip after the other, so tests/cuda/flash_attention_test.cc checks this very algorithm on the
// CPU against the CPU engine.
//
// Tiles: a block owns kTile rows (queries forward and for dq, keys for dk and dv) and walks the
// other side's tiles of kTile rows; kStrips strips of kStrip rows, one per warp. A tile of q, k,
// v or dout rows holds `Ops::Elem` (bf16 on the device; on the host float, rounded to bf16 or not):
// the fp32 inputs are rounded while loaded, products accumulate in fp32. Rows past the sequence
// load as zeros and are masked; nothing is written for them.
//
// The `Ops` contract (see HostTileOps): Elem, kDim (head_dim); Thread()/Threads() spread a tile
// load over the block; Warp()/Warps() spread the strips; Lane()/Lanes() spread a strip's rows or
// elements; SyncBlock() and SyncWarp() order shared memory; ToElem rounds; ScoresABt and
// AccumulateAB are the two tile products. Every function writes only what its thread owns: no
// atomics, so a launch gives the same bits every time.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/kernel_math.h"

namespace pipette::cuda::flash {

using math::AttnDims;

constexpr int kTile = 64;                // rows of a block's tile and of the tiles it walks
constexpr int kStrip = 16;               // rows of a warp's strip (the WMMA fragment's m)
constexpr int kStrips = kTile / kStrip;  // strips of a tile: one warp each
constexpr int kThreads = 32 * kStrips;   // threads of a block
constexpr int kScoreLd = kTile + 4;      // row stride of a float score tile (kTile columns)
constexpr int kProbLd = kTile + 8;       // row stride of an Elem probability tile
PIPETTE_HD constexpr int ElemLd(int d) { return d + 8; }  // an Elem tile of d columns
PIPETTE_HD constexpr int AccLd(int d) { return d + 4; }   // a float accumulator of d columns

// Head dims the tiled kernels take; others use the exact kernels (kernels.h).
PIPETTE_HD inline bool FlashHeadDim(int d) { return d == 64 || d == 128; }
PIPETTE_HD inline int TileCount(int seq) { return (seq + kTile - 1) / kTile; }

// x rounded to the nearest bf16 (ties to even), as __float2bfloat16 does; NaN stays NaN.
PIPETTE_HD inline float RoundToBf16(float x) {
  std::uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) return x;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  memcpy(&x, &bits, sizeof x);
  return x;
}

// The causal mask: query row `query` sees key row `key` of its sequence.
PIPETTE_HD inline bool Visible(int query, int key, int seq) { return key <= query && query < seq; }

// The shared-memory tiles of a block (device: dynamic shared memory; host: vectors). A kernel sets
// the ones it uses: q, k, v, g (dout) are kTile x ElemLd(d); p, ds kTile x kProbLd; s, dp
// kTile x kScoreLd; acc, acc2 kTile x AccLd(d); row, row2 kTile per-row values.
template <class Elem>
struct Tiles {
  Elem *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *p = nullptr, *ds = nullptr;
  float *s = nullptr, *dp = nullptr, *acc = nullptr, *acc2 = nullptr, *row = nullptr,
        *row2 = nullptr;
};

// Tile byte sizes, for the device's shared memory (each a multiple of 128 bytes).
PIPETTE_HD constexpr int ElemTileBytes(int d) { return kTile * ElemLd(d) * 2; }
PIPETTE_HD constexpr int ProbTileBytes() { return kTile * kProbLd * 2; }
PIPETTE_HD constexpr int ScoreTileBytes() { return kTile * kScoreLd * 4; }
PIPETTE_HD constexpr int AccTileBytes(int d) { return kTile * AccLd(d) * 4; }
PIPETTE_HD constexpr int RowBytes() { return kTile * 4; }
// Forward: q, k, v, p, s, acc (o), row (max), row2 (sum).
PIPETTE_HD constexpr int ForwardSmemBytes(int d) {
  return 3 * ElemTileBytes(d) + ProbTileBytes() + ScoreTileBytes() + AccTileBytes(d) +
         2 * RowBytes();
}
// dq: q, g, k, v, ds, s, dp, acc (dq), row (lse), row2 (delta).
PIPETTE_HD constexpr int DqSmemBytes(int d) {
  return 4 * ElemTileBytes(d) + ProbTileBytes() + 2 * ScoreTileBytes() + AccTileBytes(d) +
         2 * RowBytes();
}
// dk, dv: k, v, q, g, p, ds, s, dp, acc (dk), acc2 (dv), row (lse), row2 (delta).
PIPETTE_HD constexpr int DkvSmemBytes(int d) {
  return 4 * ElemTileBytes(d) + 2 * ProbTileBytes() + 2 * ScoreTileBytes() + 2 * AccTileBytes(d) +
         2 * RowBytes();
}

// Loads kTile rows of d = Ops::kDim columns from `src` (row stride ld) into `dst`, rounded to
// Elem; rows from `rows` on (past the sequence) are zeros.
template <class Ops>
PIPETTE_HD void LoadTile(const Ops& ops, typename Ops::Elem* dst, const float* src, std::int64_t ld,
                         int rows) {
  constexpr int d = Ops::kDim;
  for (int i = ops.Thread(); i < kTile * d; i += ops.Threads()) {
    const int r = i / d, c = i % d;
    dst[r * ElemLd(d) + c] = ops.ToElem(r < rows ? src[r * ld + c] : 0.0f);
  }
}

// kTile per-row values from `src` (rows from `rows` on: 0).
template <class Ops>
PIPETTE_HD void LoadRowValues(const Ops& ops, float* dst, const float* src, int rows) {
  for (int i = ops.Thread(); i < kTile; i += ops.Threads()) dst[i] = i < rows ? src[i] : 0.0f;
}

template <class Ops>
PIPETTE_HD void Fill(const Ops& ops, float* dst, int n, float value) {
  for (int i = ops.Thread(); i < n; i += ops.Threads()) dst[i] = value;
}

// The online-softmax step of query row r of the tile for one key tile: the row's running max
// (t.row) and sum (t.row2) take the tile's scores t.s (unscaled q.k) of the visible keys, the
// output accumulator's row (t.acc) is rescaled to the new max, and t.p gets exp(scale s - max)
// (0 where masked) for the P.V product. A row that sees no key of the tile only zeroes its p.
template <class Ops>
PIPETTE_HD void ForwardRowStep(const Ops& ops, const Tiles<typename Ops::Elem>& t, int r, int query,
                               int k0, int seq, float scale) {
  const float* s = t.s + r * kScoreLd;
  typename Ops::Elem* p = t.p + r * kProbLd;
  const float old_max = t.row[r];
  float mx = old_max;
  for (int c = 0; c < kTile; ++c) {
    if (Visible(query, k0 + c, seq)) mx = fmaxf(mx, scale * s[c]);
  }
  if (mx == -INFINITY) {  // nothing visible (a row past the sequence)
    for (int c = 0; c < kTile; ++c) p[c] = ops.ToElem(0.0f);
    return;
  }
  const float rescale = expf(old_max - mx);  // 0 on the first visible tile (old_max = -inf)
  float sum = 0;
  for (int c = 0; c < kTile; ++c) {
    const float pc = Visible(query, k0 + c, seq) ? expf(scale * s[c] - mx) : 0.0f;
    p[c] = ops.ToElem(pc);
    sum += pc;
  }
  t.row[r] = mx;
  t.row2[r] = t.row2[r] * rescale + sum;
  float* o = t.acc + r * AccLd(Ops::kDim);
  for (int c = 0; c < Ops::kDim; ++c) o[c] *= rescale;
}

// The forward of one block: query tile qt of query head j of sequence b. Writes its rows of out
// ((batch*seq) x out_cols) and lse ([(b * heads + j) * seq + row]).
template <class Ops>
PIPETTE_HD void ForwardBlock(const Ops& ops, const Tiles<typename Ops::Elem>& t, const float* qkv,
                             const AttnDims& s, int b, int j, int qt, float* out, float* lse) {
  constexpr int d = Ops::kDim;
  const int ld = s.qkv_cols(), kv = j / s.group(), q0 = qt * kTile;
  const std::int64_t row0 = std::int64_t{b} * s.seq;  // the sequence's first token
  LoadTile(ops, t.q, qkv + (row0 + q0) * ld + j * d, ld, s.seq - q0);
  Fill(ops, t.row, kTile, -INFINITY);
  Fill(ops, t.row2, kTile, 0.0f);
  Fill(ops, t.acc, kTile * AccLd(d), 0.0f);
  for (int kt = 0; kt <= qt; ++kt) {  // key tiles up to the diagonal
    const int k0 = kt * kTile;
    ops.SyncBlock();  // the previous key tile is consumed (first time: q and the fills are in)
    LoadTile(ops, t.k, qkv + (row0 + k0) * ld + (s.heads + kv) * d, ld, s.seq - k0);
    LoadTile(ops, t.v, qkv + (row0 + k0) * ld + (s.heads + s.kv_heads + kv) * d, ld, s.seq - k0);
    ops.SyncBlock();
    for (int strip = ops.Warp(); strip < kStrips; strip += ops.Warps()) {
      ops.ScoresABt(t.q, t.k, t.s, strip);  // s = q k^T
      ops.SyncWarp();
      for (int r = strip * kStrip + ops.Lane(); r < (strip + 1) * kStrip; r += ops.Lanes()) {
        ForwardRowStep(ops, t, r, q0 + r, k0, s.seq, s.scale());
      }
      ops.SyncWarp();
      ops.AccumulateAB(t.p, t.v, t.acc, strip);  // o += p v
    }
  }
  const int oc = s.out_cols();
  for (int strip = ops.Warp(); strip < kStrips; strip += ops.Warps()) {
    ops.SyncWarp();
    for (int r = strip * kStrip + ops.Lane(); r < (strip + 1) * kStrip; r += ops.Lanes()) {
      if (q0 + r >= s.seq) continue;
      lse[(std::int64_t{b} * s.heads + j) * s.seq + q0 + r] = t.row[r] + logf(t.row2[r]);
      t.row2[r] = 1.0f / t.row2[r];
    }
    ops.SyncWarp();
    for (int e = ops.Lane(); e < kStrip * d; e += ops.Lanes()) {
      const int r = strip * kStrip + e / d, c = e % d;
      if (q0 + r < s.seq)
        out[(row0 + q0 + r) * oc + j * d + c] = t.acc[r * AccLd(d) + c] * t.row2[r];
    }
  }
}

// One element of the backward's recompute: p = exp(scale s - lse) and dS = p (dP - delta), both 0
// where masked; p and dS stored rounded to Elem at index `at` of t.p (when not null) and t.ds.
template <class Ops>
PIPETTE_HD void ScoreGradAt(const Ops& ops, const Tiles<typename Ops::Elem>& t, int at,
                            int score_at, bool visible, float lse, float delta, float scale) {
  const float p = visible ? expf(scale * t.s[score_at] - lse) : 0.0f;
  if (t.p != nullptr) t.p[at] = ops.ToElem(p);
  t.ds[at] = ops.ToElem(p * (t.dp[score_at] - delta));
}

// Writes scale * acc of rows [r0, r0 + kStrip) of a tile starting at token `first` (rows at or
// past `seq` are skipped) into columns col.. of dst (row stride ld).
template <class Ops>
PIPETTE_HD void StoreStrip(const Ops& ops, const float* acc, int strip, int tile0, int seq,
                           float scale, float* dst, std::int64_t first, int ld, int col) {
  constexpr int d = Ops::kDim;
  for (int e = ops.Lane(); e < kStrip * d; e += ops.Lanes()) {
    const int r = strip * kStrip + e / d, c = e % d;
    if (tile0 + r < seq) dst[(first + r) * ld + col + c] = scale * acc[r * AccLd(d) + c];
  }
}

// dq of one block: query tile qt of query head j of sequence b, over the key tiles up to the
// diagonal: dq = scale * sum_c dS_c k_c (the q columns of dqkv, overwritten).
template <class Ops>
PIPETTE_HD void DqBlock(const Ops& ops, const Tiles<typename Ops::Elem>& t, const float* dout,
                        const float* qkv, const float* lse, const float* delta, const AttnDims& s,
                        int b, int j, int qt, float* dqkv) {
  constexpr int d = Ops::kDim;
  const int ld = s.qkv_cols(), kv = j / s.group(), q0 = qt * kTile;
  const std::int64_t row0 = std::int64_t{b} * s.seq, li = (std::int64_t{b} * s.heads + j) * s.seq;
  LoadTile(ops, t.q, qkv + (row0 + q0) * ld + j * d, ld, s.seq - q0);
  LoadTile(ops, t.g, dout + (row0 + q0) * s.out_cols() + j * d, s.out_cols(), s.seq - q0);
  LoadRowValues(ops, t.row, lse + li + q0, s.seq - q0);
  LoadRowValues(ops, t.row2, delta + li + q0, s.seq - q0);
  Fill(ops, t.acc, kTile * AccLd(d), 0.0f);
  for (int kt = 0; kt <= qt; ++kt) {
    const int k0 = kt * kTile;
    ops.SyncBlock();
    LoadTile(ops, t.k, qkv + (row0 + k0) * ld + (s.heads + kv) * d, ld, s.seq - k0);
    LoadTile(ops, t.v, qkv + (row0 + k0) * ld + (s.heads + s.kv_heads + kv) * d, ld, s.seq - k0);
    ops.SyncBlock();
    for (int strip = ops.Warp(); strip < kStrips; strip += ops.Warps()) {
      ops.ScoresABt(t.q, t.k, t.s, strip);   // s = q k^T
      ops.ScoresABt(t.g, t.v, t.dp, strip);  // dP = dout v^T
      ops.SyncWarp();
      for (int e = ops.Lane(); e < kStrip * kTile; e += ops.Lanes()) {
        const int r = strip * kStrip + e / kTile, c = e % kTile;
        ScoreGradAt(ops, t, r * kProbLd + c, r * kScoreLd + c, Visible(q0 + r, k0 + c, s.seq),
                    t.row[r], t.row2[r], s.scale());
      }
      ops.SyncWarp();
      ops.AccumulateAB(t.ds, t.k, t.acc, strip);  // dq += dS k
    }
  }
  for (int strip = ops.Warp(); strip < kStrips; strip += ops.Warps()) {
    ops.SyncWarp();
    StoreStrip(ops, t.acc, strip, q0, s.seq, s.scale(), dqkv, row0 + q0, ld, j * d);
  }
}

// dk and dv of one block: key tile kt of kv head g of sequence b, over the query tiles from the
// diagonal on of every query head of g's group. The tiles hold transposes (key rows, query
// columns): s = k q^T, dP^T = v dout^T; dv = sum_r p_r dout_r, dk = scale * sum_r dS_r q_r (the
// k and v columns of dqkv, overwritten).
template <class Ops>
PIPETTE_HD void DkvBlock(const Ops& ops, const Tiles<typename Ops::Elem>& t, const float* dout,
                         const float* qkv, const float* lse, const float* delta, const AttnDims& s,
                         int b, int g, int kt, float* dqkv) {
  constexpr int d = Ops::kDim;
  const int ld = s.qkv_cols(), oc = s.out_cols(), k0 = kt * kTile;
  const std::int64_t row0 = std::int64_t{b} * s.seq;
  LoadTile(ops, t.k, qkv + (row0 + k0) * ld + (s.heads + g) * d, ld, s.seq - k0);
  LoadTile(ops, t.v, qkv + (row0 + k0) * ld + (s.heads + s.kv_heads + g) * d, ld, s.seq - k0);
  Fill(ops, t.acc, kTile * AccLd(d), 0.0f);
  Fill(ops, t.acc2, kTile * AccLd(d), 0.0f);
  for (int j = g * s.group(); j < (g + 1) * s.group(); ++j) {
    const std::int64_t li = (std::int64_t{b} * s.heads + j) * s.seq;
    for (int qt = kt; qt < TileCount(s.seq); ++qt) {
      const int q0 = qt * kTile;
      ops.SyncBlock();
      LoadTile(ops, t.q, qkv + (row0 + q0) * ld + j * d, ld, s.seq - q0);
      LoadTile(ops, t.g, dout + (row0 + q0) * oc + j * d, oc, s.seq - q0);
      LoadRowValues(ops, t.row, lse + li + q0, s.seq - q0);
      LoadRowValues(ops, t.row2, delta + li + q0, s.seq - q0);
      ops.SyncBlock();
      for (int strip = ops.Warp(); strip < kStrips; strip += ops.Warps()) {
        ops.ScoresABt(t.k, t.q, t.s, strip);   // s^T = k q^T
        ops.ScoresABt(t.v, t.g, t.dp, strip);  // dP^T = v dout^T
        ops.SyncWarp();
        for (int e = ops.Lane(); e < kStrip * kTile; e += ops.Lanes()) {
          const int r = strip * kStrip + e / kTile, c = e % kTile;  // key r, query c
          ScoreGradAt(ops, t, r * kProbLd + c, r * kScoreLd + c, Visible(q0 + c, k0 + r, s.seq),
                      t.row[c], t.row2[c], s.scale());
        }
        ops.SyncWarp();
        ops.AccumulateAB(t.p, t.g, t.acc2, strip);  // dv += p^T dout
        ops.AccumulateAB(t.ds, t.q, t.acc, strip);  // dk += dS^T q
      }
    }
  }
  for (int strip = ops.Warp(); strip < kStrips; strip += ops.Warps()) {
    ops.SyncWarp();
    StoreStrip(ops, t.acc, strip, k0, s.seq, s.scale(), dqkv, row0 + k0, ld, (s.heads + g) * d);
    StoreStrip(ops, t.acc2, strip, k0, s.seq, 1.0f, dqkv, row0 + k0, ld,
               (s.heads + s.kv_heads + g) * d);
  }
}

// ---- the host -----------------------------------------------------------------------------------

// The tile products as plain loops (fp32 accumulation in index order), one thread doing a whole
// block strip by strip. `bf16` rounds every tile operand to bf16 as the device does; without it
// the algorithm runs in fp32 (for checking it exactly against the CPU engine).
template <int D>
struct HostTileOps {
  using Elem = float;
  static constexpr int kDim = D;
  bool bf16 = true;

  PIPETTE_HD int Thread() const { return 0; }
  PIPETTE_HD int Threads() const { return 1; }
  PIPETTE_HD int Warp() const { return 0; }
  PIPETTE_HD int Warps() const { return 1; }
  PIPETTE_HD int Lane() const { return 0; }
  PIPETTE_HD int Lanes() const { return 1; }
  PIPETTE_HD void SyncBlock() const {}
  PIPETTE_HD void SyncWarp() const {}
  PIPETTE_HD float ToElem(float x) const { return bf16 ? RoundToBf16(x) : x; }
  // c (kTile x kTile, ld kScoreLd), the strip's rows = a (ld ElemLd) . b^T (b: kTile x D).
  PIPETTE_HD void ScoresABt(const float* a, const float* b, float* c, int strip) const {
    for (int r = strip * kStrip; r < (strip + 1) * kStrip; ++r) {
      for (int n = 0; n < kTile; ++n) {
        float sum = 0;
        for (int k = 0; k < D; ++k) sum += a[r * ElemLd(D) + k] * b[n * ElemLd(D) + k];
        c[r * kScoreLd + n] = sum;
      }
    }
  }
  // c (kTile x D, ld AccLd), the strip's rows += a (kTile columns, ld kProbLd) . b (kTile x D).
  PIPETTE_HD void AccumulateAB(const float* a, const float* b, float* c, int strip) const {
    for (int r = strip * kStrip; r < (strip + 1) * kStrip; ++r) {
      for (int n = 0; n < D; ++n) {
        float sum = c[r * AccLd(D) + n];
        for (int k = 0; k < kTile; ++k) sum += a[r * kProbLd + k] * b[k * ElemLd(D) + n];
        c[r * AccLd(D) + n] = sum;
      }
    }
  }
};

// Host tiles: every buffer of Tiles, owned.
class HostTiles {
 public:
  explicit HostTiles(int d)
      : elems_(4 * kTile * ElemLd(d) + 2 * kTile * kProbLd),
        floats_(2 * kTile * kScoreLd + 2 * kTile * AccLd(d) + 2 * kTile) {
    float* e = elems_.data();
    float* f = floats_.data();
    const int et = kTile * ElemLd(d), at = kTile * AccLd(d);
    tiles_ = {e,
              e + et,
              e + 2 * et,
              e + 3 * et,
              e + 4 * et,
              e + 4 * et + kTile * kProbLd,
              f,
              f + kTile * kScoreLd,
              f + 2 * kTile * kScoreLd,
              f + 2 * kTile * kScoreLd + at,
              f + 2 * kTile * kScoreLd + 2 * at,
              f + 2 * kTile * kScoreLd + 2 * at + kTile};
  }
  const Tiles<float>& tiles() const { return tiles_; }

 private:
  std::vector<float> elems_, floats_;
  Tiles<float> tiles_;
};

// The forward over every block, as the device launches it (out, lse as ForwardBlock).
// REQUIRES: FlashHeadDim(D) == true, D == s.head_dim.
template <int D>
void ForwardOnHost(const float* qkv, const AttnDims& s, bool bf16, float* out, float* lse) {
  const HostTileOps<D> ops{bf16};
  const HostTiles tiles(D);
  for (int b = 0; b < s.batch; ++b) {
    for (int j = 0; j < s.heads; ++j) {
      for (int qt = 0; qt < TileCount(s.seq); ++qt) {
        ForwardBlock(ops, tiles.tiles(), qkv, s, b, j, qt, out, lse);
      }
    }
  }
}

// The backward over every block: delta (batch*heads*seq) = rowsum(dout * out), then dq, then dk
// and dv; dqkv is overwritten. REQUIRES: as ForwardOnHost.
template <int D>
void InputGradOnHost(const float* dout, const float* qkv, const float* out, const float* lse,
                     const AttnDims& s, bool bf16, float* dqkv, float* delta) {
  const HostTileOps<D> ops{bf16};
  const HostTiles tiles(D);
  const std::int64_t query_rows = std::int64_t{s.batch} * s.heads * s.seq;
  for (std::int64_t i = 0; i < query_rows; ++i) math::AttentionDeltaAt(i, dout, out, s, delta);
  for (int b = 0; b < s.batch; ++b) {
    for (int j = 0; j < s.heads; ++j) {
      for (int qt = 0; qt < TileCount(s.seq); ++qt) {
        DqBlock(ops, tiles.tiles(), dout, qkv, lse, delta, s, b, j, qt, dqkv);
      }
    }
    for (int g = 0; g < s.kv_heads; ++g) {
      for (int kt = 0; kt < TileCount(s.seq); ++kt) {
        DkvBlock(ops, tiles.tiles(), dout, qkv, lse, delta, s, b, g, kt, dqkv);
      }
    }
  }
}

}  // namespace pipette::cuda::flash
