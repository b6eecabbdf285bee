// Published results reproduced (`pipette papers`, experiments/papers/): three published tables,
// each as the published value next to pipette's, computed from pipette's evaluated schedules.
//
//   zero-bubble  Qi et al. (ICLR 2024), arXiv:2401.10241v1 Table 5: bubble rates of 1F1B, 1F1B-I,
//                ZB-H1 and ZB-H2 at the profiled T_F, T_B, T_W, T_comm of Table 9, with the paper's
//                definition (cost - m(T_F+T_B+T_W)) / cost and T_comm as pipette's p2p latency.
//                1F1B, ZB-H1, ZB-H2 match; 1F1B-I is a documented deviation (the authors' script
//                drops a dependency); ZB-1p and ZB-2p (the authors' automatic search) are typed
//                in, not reproduced.
//   megatron     Narayanan et al. (SC '21): the interleaved bubble (p-1)/(v*m), idle over ideal,
//                against interleaved-1f1b over p in {2,4,8,16}, v in {1,2,4}, m in {p,2p,4p,8p}.
//   dualpipe     deepseek-ai/DualPipe README (DeepSeek-V3 report Table 2): bubble, parameters and
//                activations per device of 1F1B, ZB1P, DualPipe and DualPipeV as closed forms,
//                against 1f1b, zb-h1, dualpipe and dualpipe-v over a grid of p and m.
//
// The published values (numbers, or the closed forms' text) are read from the data files in a
// directory (experiments/papers/ of the source tree), which name their sources; a file whose
// columns, keys or formulas differ from what is implemented here is refused (InvalidArgument
// naming the file, line and rule). Pure functions apart from reading those files; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/schedule.h"

namespace pipette::cli {

// One row of a comparison: its cells as printed (one per header column).
struct ComparisonRow {
  std::vector<std::string> cells;
  bool compared = true;  // false: a published value pipette has no counterpart for
  bool match = false;    // compared and equal at the published precision
  // Compared, not equal, and why (a note of the table gives the evidence); empty otherwise.
  std::string deviation;
};

struct ComparisonTable {
  std::string name;                // "zero-bubble", "megatron", "dualpipe"
  std::vector<std::string> notes;  // sources, definitions and conditions, one sentence each
  std::vector<std::string> header;
  std::vector<ComparisonRow> rows;

  int compared() const;
  int matched() const;
  // Compared cells that differ without a documented deviation (what --check refuses).
  int unexplained() const;
};

// The names `pipette papers` takes, in order: zero-bubble, megatron, dualpipe.
const std::vector<std::string>& PaperTableNames();

// Returns the named comparison built from the data files in `dir`. NotFound for an unknown name
// (listing the known ones); the loaders' errors otherwise.
Result<ComparisonTable> BuildComparison(std::string_view name, const std::string& dir);

// A Markdown table (notes as a list above it, a summary line below), or CSV (notes as
// `# ` lines, then the header and one line per row; cells holding a comma are quoted).
std::string FormatMarkdown(const ComparisonTable& table);
std::string FormatCsv(const ComparisonTable& table);

// --- Zero Bubble (Table 5 at Table 9's times) ---

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

// --- DualPipe README closed forms ---

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

// --- shared ---

// Builds, lowers and evaluates a built-in schedule with uniform per-chunk `cost`.
Result<Evaluation> EvaluateBuiltIn(std::string_view name, const ScheduleParams& params,
                                   StageCost cost, double latency, bool record_timeline = false);

}  // namespace pipette::cli
