// The deepseek-ai/DualPipe README (DeepSeek-V3 report Table 2): bubble, parameters and
// activations per device of 1F1B, ZB1P, DualPipe and DualPipeV as closed forms, against 1f1b,
// zb-h1, dualpipe and dualpipe-v over a grid of p and m
// (experiments/papers/dualpipe_comparison.csv).
#pragma once

#include <string>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/papers/comparison.h"
#include "pipette/schedule/costs.h"

namespace pipette {

// Pipette's side of one README row at one (p, m, costs): `bubble` is DeepSeek's absolute bubble,
// makespan minus a device's compute time (the same on every device of these schedules);
// `parameters` the stages a device holds, in units of one of the PP stages a microbatch passes
// (1F1B holds 1); `activations` the largest in-flight count over devices, in the same units;
// `devices` p; `pp` the stages a microbatch passes.
struct DualPipeMeasure {
  double bubble = 0.0;
  int parameters = 0;
  int activations = 0;
  int devices = 0;
  int pp = 0;
};
Result<DualPipeMeasure> MeasureDualPipeRow(std::string_view schedule, int p, int m, StageCost cost);

// The README's closed forms with F&B = F + B (pipette's cost of an overlapped cell):
// 1F1B (PP-1)(F+B); ZB1P (PP-1)(F+B-2W); DualPipe and DualPipeV (PP/2-1)(F&B+B-3W).
// REQUIRES: method is one of 1F1B, ZB1P, DualPipe, DualPipeV.
double DualPipeReadmeBubble(std::string_view method, int pp, StageCost cost);

// The comparison table (BuildComparison's "dualpipe").
Result<ComparisonTable> DualPipeComparison(const std::string& dir);

}  // namespace pipette
