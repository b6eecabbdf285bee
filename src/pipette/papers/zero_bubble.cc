#include "pipette/papers/zero_bubble.h"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "pipette/common/printable.h"
#include "pipette/papers/paper_data.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {

using paper_data::DataFile;
using paper_data::FileError;
using paper_data::Fixed;
using paper_data::MatchCell;
using paper_data::ParseCount;
using paper_data::ParseNumber;
using paper_data::ReadDataFile;

const std::vector<std::string>& ZeroBubbleColumns() {
  static const std::vector<std::string> columns = {"1F1B",  "1F1B-I", "ZB-H1",
                                                   "ZB-H2", "ZB-1p",  "ZB-2p"};
  return columns;
}

namespace {

// Evaluation with every message taking `latency` (the paper's T_comm).
EvaluateOptions Latency(double latency) {
  EvaluateOptions options;
  options.p2p_latency = latency;
  return options;
}

const std::vector<std::string> kTimesColumns = {"model", "p",   "m",      "T_F",
                                                "T_B",   "T_W", "T_comm", "interleaved_v"};

std::vector<std::string> RatesColumns() {
  std::vector<std::string> columns = {"model", "p", "m"};
  for (const std::string& c : ZeroBubbleColumns()) columns.push_back(c);
  return columns;
}

Result<ZeroBubbleSetting> ParseTimesRow(const DataFile& times, std::size_t r) {
  ZeroBubbleSetting s;
  s.model = times.rows[r][0];
  PIPETTE_ASSIGN_OR_RETURN(s.p, ParseCount(times, r, 1));
  PIPETTE_ASSIGN_OR_RETURN(s.m, ParseCount(times, r, 2));
  PIPETTE_ASSIGN_OR_RETURN(s.cost.f, ParseNumber(times, r, 3));
  PIPETTE_ASSIGN_OR_RETURN(s.cost.i, ParseNumber(times, r, 4));
  PIPETTE_ASSIGN_OR_RETURN(s.cost.w, ParseNumber(times, r, 5));
  PIPETTE_ASSIGN_OR_RETURN(s.comm, ParseNumber(times, r, 6));
  PIPETTE_ASSIGN_OR_RETURN(s.interleaved_v, ParseCount(times, r, 7));
  return s;
}

// The span of every rank's compute, from its first start to its last end.
std::vector<double> RankSpans(const Program& program, const Evaluation& e) {
  std::vector<double> spans;
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    double first = -1.0, last = 0.0;
    const std::vector<Instruction>& list = program.ranks[r].instructions;
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (!IsCompute(list[k].action.kind)) continue;
      if (first < 0.0) first = e.timeline[r][k].start;
      last = std::max(last, e.timeline[r][k].end);
    }
    spans.push_back(first < 0.0 ? 0.0 : last - first);
  }
  return spans;
}

Result<double> LargestRankSpan(std::string_view name, const ScheduleParams& params, StageCost cost,
                               double latency) {
  PIPETTE_ASSIGN_OR_RETURN(Schedule schedule, MakeSchedule(name, params));
  PIPETTE_ASSIGN_OR_RETURN(Program program, Lower(schedule));
  EvaluateOptions options;
  options.p2p_latency = latency;
  options.record_timeline = true;
  PIPETTE_ASSIGN_OR_RETURN(Evaluation e,
                           Evaluate(program, Costs::Uniform(schedule.num_stages(), cost), options));
  const std::vector<double> spans = RankSpans(program, e);
  return *std::max_element(spans.begin(), spans.end());
}

}  // namespace

Result<std::vector<ZeroBubbleSetting>> LoadZeroBubbleSettings(const std::string& dir) {
  PIPETTE_ASSIGN_OR_RETURN(DataFile times,
                           ReadDataFile(dir, "zero_bubble_profiled_times.csv", kTimesColumns));
  PIPETTE_ASSIGN_OR_RETURN(DataFile rates,
                           ReadDataFile(dir, "zero_bubble_bubble_rates.csv", RatesColumns()));
  if (times.rows.size() != rates.rows.size()) {
    return FileError(rates, 0,
                     fmt::format("{} settings: must be the {} of '{}', in the same order",
                                 rates.rows.size(), times.rows.size(), Printable(times.path)));
  }
  std::vector<ZeroBubbleSetting> settings;
  for (std::size_t r = 0; r < times.rows.size(); ++r) {
    PIPETTE_ASSIGN_OR_RETURN(ZeroBubbleSetting s, ParseTimesRow(times, r));
    const std::vector<std::string>& row = rates.rows[r];
    if (row[0] != times.rows[r][0] || row[1] != times.rows[r][1] || row[2] != times.rows[r][2]) {
      return FileError(rates, rates.lines[r],
                       fmt::format("setting ({}, {}, {}): must be ({}, {}, {}) as in '{}'",
                                   Printable(row[0]), Printable(row[1]), Printable(row[2]), s.model,
                                   s.p, s.m, Printable(times.path)));
    }
    for (std::size_t c = 3; c < row.size(); ++c) {
      PIPETTE_RETURN_IF_ERROR(ParseNumber(rates, r, c).status());
      s.published.push_back(row[c]);
    }
    settings.push_back(std::move(s));
  }
  return settings;
}

Result<double> ZeroBubbleCost(const ZeroBubbleSetting& s, std::string_view column) {
  const ScheduleParams flat{s.p, 1, s.m, 0};
  if (column == "1F1B") {
    PIPETTE_ASSIGN_OR_RETURN(Evaluation e,
                             EvaluateNamedSchedule("1f1b", flat, s.cost, Latency(s.comm)));
    return e.makespan;
  }
  if (column == "1F1B-I") {
    const double v = s.interleaved_v;
    const StageCost chunk{s.cost.f / v, s.cost.i / v, s.cost.w / v};
    PIPETTE_ASSIGN_OR_RETURN(
        Evaluation e,
        EvaluateNamedSchedule("interleaved-1f1b", ScheduleParams{s.p, s.interleaved_v, s.m, 0},
                              chunk, Latency(s.comm)));
    return e.makespan;
  }
  if (column == "ZB-H1") {
    PIPETTE_ASSIGN_OR_RETURN(Evaluation e,
                             EvaluateNamedSchedule("zb-h1", flat, s.cost, Latency(s.comm)));
    return e.makespan;
  }
  if (column == "ZB-H2") return LargestRankSpan("zb-h2", flat, s.cost, s.comm);
  return Status::NotFound(fmt::format(
      "Zero Bubble column '{}': pipette reproduces 1F1B, 1F1B-I, ZB-H1 and ZB-H2 (ZB-1p and "
      "ZB-2p are the authors' automatic search)",
      Printable(column)));
}

double ZeroBubbleRate(const ZeroBubbleSetting& s, double cost) {
  return (cost - s.m * (s.cost.f + s.cost.i + s.cost.w)) / cost;
}

namespace {

std::vector<std::string> ZeroBubbleNotes() {
  return {
      "Published: Zero Bubble Pipeline Parallelism (Qi et al., ICLR 2024), arXiv:2401.10241v1 "
      "Table 5, bubble rates at the profiled times of Table 9 (experiments/papers/"
      "zero_bubble_*.csv).",
      "Definition (the paper's Section 5.3): bubble rate = (cost - m(T_F+T_B+T_W)) / cost, cost "
      "= the largest execution time of all stages.",
      "pipette: --times F=T_F,I=T_B,W=T_W (the paper's B is pipette's I) and --latency T_comm; "
      "cost = makespan from the common start (1F1B, 1F1B-I, ZB-H1) or, for ZB-H2 as in the "
      "authors' efficiency.py, the largest per-rank span from first start to last end. The "
      "makespan adds the ramp of the first forwards, so pipette's own bubble_ratio, 1 - "
      "busy/(p*makespan), gives 1F1B, 1F1B-I and ZB-H1 but misses 9 of the 12 ZB-H2 cells "
      "(all but 1.5B; e.g. 6.2B m=24: 0.1003 against 0.0698).",
      "1F1B-I: interleaved-1f1b with v = the authors' layer slots / p (3, 4, 3, 2), per-chunk "
      "costs T/v.",
      "ZB-1p and ZB-2p are the authors' automatic (heuristic-search) schedules: typed in, not "
      "reproduced.",
      "(a) 1F1B-I differs: the authors' get_interleave_schedule (efficiency.py) makes rank 0's "
      "forward of chunk v wait for the last rank's chunk v-1 (and the last rank's backward wait "
      "for rank 0's) only for the first microbatch of each group of p, so T_comm is skipped on "
      "the other p-1 wrap-arounds. pipette keeps every dependency; the authors' script with the "
      "check made for every microbatch gives pipette's value to six digits in all 12 settings."};
}

Result<ComparisonRow> ZeroBubbleRow(const ZeroBubbleSetting& s, std::size_t column) {
  const std::string& name = ZeroBubbleColumns()[column];
  const std::string& paper = s.published[column];
  ComparisonRow row;
  row.cells = {s.model, std::to_string(s.p), std::to_string(s.m), name, paper};
  if (name == "ZB-1p" || name == "ZB-2p") {
    row.compared = false;
    row.cells.insert(row.cells.end(), {"-", "-", "not reproduced"});
    return row;
  }
  PIPETTE_ASSIGN_OR_RETURN(double cost, ZeroBubbleCost(s, name));
  const double rate = ZeroBubbleRate(s, cost);
  const std::size_t dot = paper.find('.');  // the printed precision: digits after the point
  const int digits = dot == std::string::npos ? 0 : static_cast<int>(paper.size() - dot - 1);
  row.match = Fixed(rate, digits) == paper;
  if (!row.match && name == "1F1B-I") row.deviation = "(a)";
  row.cells.insert(row.cells.end(), {Fixed(rate, digits), Fixed(rate, 6), MatchCell(row)});
  return row;
}

}  // namespace

Result<ComparisonTable> ZeroBubbleComparison(const std::string& dir) {
  PIPETTE_ASSIGN_OR_RETURN(std::vector<ZeroBubbleSetting> settings, LoadZeroBubbleSettings(dir));
  ComparisonTable table;
  table.name = "zero-bubble";
  table.notes = ZeroBubbleNotes();
  table.header = {"model", "p", "m", "schedule", "paper", "pipette", "pipette_raw", "match"};
  for (const ZeroBubbleSetting& s : settings) {
    for (std::size_t c = 0; c < ZeroBubbleColumns().size(); ++c) {
      PIPETTE_ASSIGN_OR_RETURN(ComparisonRow row, ZeroBubbleRow(s, c));
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

}  // namespace pipette
