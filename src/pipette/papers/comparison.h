// Published results reproduced (`pipette papers`, experiments/papers/): three published tables,
// each as the published value next to pipette's, computed from pipette's evaluated schedules. This
// header holds the table they share; each paper has its file (zero_bubble.h, megatron.h,
// dualpipe.h).
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

namespace pipette {

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

}  // namespace pipette
