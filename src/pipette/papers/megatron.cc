#include "pipette/papers/megatron.h"

#include <fmt/core.h>

#include <cmath>
#include <numeric>
#include <string_view>
#include <utility>

#include "pipette/papers/paper_data.h"
#include "pipette/schedule/registry.h"

namespace pipette {

using paper_data::DataFile;
using paper_data::FileError;
using paper_data::Fixed;
using paper_data::MatchCell;
using paper_data::Number;
using paper_data::ReadDataFile;

namespace {

constexpr std::string_view kMegatronFormula = "(p-1)/(v*m)";

}  // namespace

Result<ComparisonTable> MegatronComparison(const std::string& dir) {
  PIPETTE_ASSIGN_OR_RETURN(DataFile file, ReadDataFile(dir, "megatron_interleaved.csv",
                                                       {"schedule", "bubble_time_fraction"}));
  if (file.rows.size() != 1 || file.rows[0][0] != "interleaved-1f1b" ||
      file.rows[0][1] != kMegatronFormula) {
    return FileError(file, file.lines.empty() ? 0 : file.lines[0],
                     fmt::format("must hold the one row 'interleaved-1f1b,{}' that pipette checks",
                                 kMegatronFormula));
  }
  ComparisonTable table;
  table.name = "megatron";
  table.notes = {
      "Published: Narayanan et al., Efficient Large-Scale Language Model Training on GPU "
      "Clusters Using Megatron-LM (SC '21), arXiv:2104.04473 Section 2.2.2: interleaved bubble "
      "time fraction (p-1)/(v*m) (experiments/papers/megatron_interleaved.csv).",
      "Definition: bubble time over ideal time, idle/ideal = (makespan - busy/p) / (busy/p) "
      "(pipette prints it as idle/ideal; bubble_ratio is idle/total).",
      "pipette: interleaved-1f1b -p P -v V -m M (G = p) at --times F=1,I=1,W=1 (B = 2F), zero "
      "latency. The form is exact for any uniform per-chunk F and B at zero latency when G divides "
      "m; a p2p latency adds bubble it does not count."};
  table.header = {"p", "v", "m", "formula", "pipette", "makespan", "match"};
  for (int p : {2, 4, 8, 16}) {
    for (int v : {1, 2, 4}) {
      for (int k : {1, 2, 4, 8}) {
        const int m = k * p;
        PIPETTE_ASSIGN_OR_RETURN(
            Evaluation e, EvaluateNamedSchedule("interleaved-1f1b", ScheduleParams{p, v, m, 0},
                                                StageCost{1, 1, 1}));
        const double ideal = std::accumulate(e.busy.begin(), e.busy.end(), 0.0) / p;
        const double measured = (e.makespan - ideal) / ideal;
        const double formula = static_cast<double>(p - 1) / (v * m);
        ComparisonRow row;
        row.match = std::fabs(measured - formula) <= 1e-12 * formula;
        row.cells = {std::to_string(p),  std::to_string(v),  std::to_string(m), Fixed(formula, 6),
                     Fixed(measured, 6), Number(e.makespan), MatchCell(row)};
        table.rows.push_back(std::move(row));
      }
    }
  }
  return table;
}

}  // namespace pipette
