// GemmTable: one machine's GEMM time per call over a grid of shapes, for each of the three ways
// the engine calls a GEMM (the pass), measured by `pipette calibrate` (backends/cpu/calibrate.h:
// MeasureGemmTable) and read by a fitted cost model (fidelity/cost_fit.h), which prices every GEMM
// of a configuration by it: a GEMM's efficiency depends on its shape (a 64-row GEMM runs at about
// 70% of the rate of a 256-row one on one core), which a run at one shape cannot show. Between
// the grid's sizes the table interpolates the time per FLOP linearly in log2 m, log2 n, log2 k
// (trilinear); beyond them it keeps the edge's time per FLOP. Plain values and pure functions.
//
// Example:
//   Result<GemmTable> table = GemmTable::Of(calibration.gemms);
//   double s = table->SecondsOf({.m = 64, .n = 768, .k = 256}, GemmPass::kForward);
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/op_inventory.h"

namespace pipette {

// How a linear layer's pass calls sgemm in the CPU engine (backends/cpu/tensor.cc):
//   kForward     y = x W^T     Gemm(N, T), x just computed (in cache), W from memory, beta 0
//   kInputGrad   dx = dy W     Gemm(N, N), dy just computed, W from memory, beta 0
//   kWeightGrad  dW += dy^T x  Gemm(T, N), dy just computed, x and dW from memory, beta 1
enum class GemmPass : int { kForward, kInputGrad, kWeightGrad };
inline constexpr int kGemmPasses = 3;
inline constexpr GemmPass kAllGemmPasses[] = {GemmPass::kForward, GemmPass::kInputGrad,
                                              GemmPass::kWeightGrad};
std::string_view GemmPassName(GemmPass pass);               // "F", "I", "W"
std::optional<GemmPass> GemmPassOf(std::string_view name);  // GemmPassName's inverse

struct GemmTiming {  // one shape's median time per call: op(A) m x k, op(B) k x n, C m x n
  std::int64_t m = 0, n = 0, k = 0;
  int ranks = 1;       // processes running the same GEMM at once while it was timed
  double seconds = 0;  // per call
  GemmPass pass = GemmPass::kForward;
  friend bool operator==(const GemmTiming&, const GemmTiming&) = default;
};

// The sizes a calibration's table measures in each of m, n and k: the powers of two from 16 up to
// `max` (none below 16).
std::vector<std::int64_t> GemmTableSizes(std::int64_t max);

// Times a table in rounds (backends/cpu/calibrate.h, MeasureGemmTable, with `time_repeat` one
// repeat's seconds per call of a pass and shape on the machine): a warm-up round, then `repeats`
// rounds over the grid of `sizes` (m, n, k), each shape's three passes back to back; each entry the
// median of its rounds, by pass, m, n, k, with `ranks`. A slow spell of the machine shorter than
// a round lands on at most one round of each entry, which the median drops (repeats >= 3); timed
// pass by pass or shape by shape, the spell would move one pass or one band of shapes alone,
// and a fitted cost model would take that for the GEMMs' own speed.
using GemmRepeatTimer =
    std::function<double(GemmPass pass, std::int64_t m, std::int64_t n, std::int64_t k)>;
std::vector<GemmTiming> TimeGemmTableInRounds(const std::vector<std::int64_t>& sizes, int repeats,
                                              int ranks, const GemmRepeatTimer& time_repeat);

class GemmTable {
 public:
  GemmTable() = default;  // empty: prices nothing

  // The table of `timings`: for each pass it has, a full grid (every combination of the m, n and
  // k values they use, each once) with positive sizes and times. InvalidArgument naming the first
  // missing or bad shape otherwise.
  static Result<GemmTable> Of(std::vector<GemmTiming> timings);

  bool empty() const { return timings_.empty(); }
  const std::vector<GemmTiming>& timings() const { return timings_; }  // by pass, m, n, k

  // Seconds per call of a GEMM of `shape` called as `pass` (a pass the table lacks: the first it
  // has). REQUIRES: !empty(), every size >= 1.
  double SecondsOf(const GemmShape& shape, GemmPass pass) const;

 private:
  struct Grid {
    std::vector<std::int64_t> ms, ns, ks;
    std::vector<double> log_per_flop;  // ln(seconds / 2mnk), indexed (im * ns + in) * ks + ik
  };
  std::vector<GemmTiming> timings_;
  std::array<Grid, kGemmPasses> grids_;
};

}  // namespace pipette
