// Zero Bubble Pipeline Parallelism (Qi et al., ICLR 2024), arXiv:2401.10241v1: Table 5's bubble
// rates at Table 9's profiled times (experiments/papers/zero_bubble_*.csv) against pipette's
// 1f1b, interleaved-1f1b, zb-h1 and zb-h2 (comparison.h says what the tables share).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/papers/comparison.h"
#include "pipette/schedule/costs.h"

namespace pipette {

// The published columns of Table 5, in the paper's order.
const std::vector<std::string>& ZeroBubbleColumns();

struct ZeroBubbleSetting {
  std::string model;  // "1.5B", ...
  int p = 0;
  int m = 0;
  int interleaved_v = 0;  // chunks per rank of 1F1B-I (the authors' script: layer slots / p)
  StageCost cost;         // f = T_F, i = T_B (the paper's B is pipette's I), w = T_W; ms
  double comm = 0.0;      // T_comm, ms
  std::vector<std::string> published;  // per ZeroBubbleColumns(), as printed ("0.2431")
};

// Reads zero_bubble_profiled_times.csv and zero_bubble_bubble_rates.csv from `dir` and joins them
// on (model, p, m); both must list the same settings in the same order.
Result<std::vector<ZeroBubbleSetting>> LoadZeroBubbleSettings(const std::string& dir);

// The paper's cost of one Table 5 column at `s`: the schedule evaluated at s.cost with latency
// s.comm, measured as the authors' efficiency.py measures it. 1F1B, 1F1B-I (interleaved-1f1b at
// v = s.interleaved_v, per-chunk costs divided by v) and ZB-H1: the makespan from the common
// start. ZB-H2: the largest per-rank span, from a rank's first compute start to its last end.
// NotFound for ZB-1p and ZB-2p (no pipette counterpart) and unknown columns.
Result<double> ZeroBubbleCost(const ZeroBubbleSetting& s, std::string_view column);

// (cost - m(T_F + T_B + T_W)) / cost, the paper's bubble rate (Section 5.3).
double ZeroBubbleRate(const ZeroBubbleSetting& s, double cost);

// The comparison table (BuildComparison's "zero-bubble").
Result<ComparisonTable> ZeroBubbleComparison(const std::string& dir);

}  // namespace pipette
