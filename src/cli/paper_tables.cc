#include "cli/paper_tables.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <sstream>
#include <utility>

#include "pipette/common/bounded_file.h"
#include "pipette/common/printable.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette::cli {
namespace {

// ---------------------------------------------------------------------------------------------
// Data files: '#' lines are the source notes, then a header line and comma-separated rows.

constexpr std::uintmax_t kMaxDataFileBytes = 1 << 20;

struct DataFile {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // 1-based line number of each row
};

std::vector<std::string> SplitCommas(std::string_view line) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    cells.emplace_back(line.substr(start, comma - start));
    if (comma == std::string_view::npos) return cells;
    start = comma + 1;
  }
}

Status FileError(const DataFile& file, int line, const std::string& rule) {
  return Status::InvalidArgument(
      fmt::format("paper data '{}' line {}: {}", Printable(file.path), line, rule));
}

// Reads `dir`/`name` and checks that its header is `columns`, and every row has that many cells.
Result<DataFile> ReadDataFile(const std::string& dir, std::string_view name,
                              const std::vector<std::string>& columns) {
  DataFile file;
  file.path = dir + "/" + std::string(name);
  PIPETTE_ASSIGN_OR_RETURN(std::string text,
                           ReadFileBounded(file.path, kMaxDataFileBytes, "paper data"));
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells = SplitCommas(line);
    if (file.header.empty()) {
      if (cells != columns) {
        return FileError(file, number,
                         fmt::format("header '{}': must be '{}'", Printable(line),
                                     fmt::format("{}", fmt::join(columns, ","))));
      }
      file.header = std::move(cells);
      continue;
    }
    if (cells.size() != columns.size()) {
      return FileError(file, number,
                       fmt::format("{} cells: must be {}", cells.size(), columns.size()));
    }
    file.rows.push_back(std::move(cells));
    file.lines.push_back(number);
  }
  if (file.header.empty()) return FileError(file, 0, "no header line");
  return file;
}

Result<double> ParseNumber(const DataFile& file, std::size_t row, std::size_t column) {
  const std::string& text = file.rows[row][column];
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0.0) {
    return FileError(file, file.lines[row],
                     fmt::format("{} = '{}': must be a non-negative number", file.header[column],
                                 Printable(text)));
  }
  return value;
}

Result<int> ParseCount(const DataFile& file, std::size_t row, std::size_t column) {
  PIPETTE_ASSIGN_OR_RETURN(double value, ParseNumber(file, row, column));
  if (value < 1.0 || value > 1e6 || value != std::floor(value)) {
    return FileError(file, file.lines[row],
                     fmt::format("{} = '{}': must be a whole number in [1, 1000000]",
                                 file.header[column], Printable(file.rows[row][column])));
  }
  return static_cast<int>(value);
}

// The match column: "yes", "no (a)" for a documented deviation, "NO" otherwise.
std::string MatchCell(const ComparisonRow& row) {
  if (row.match) return "yes";
  return row.deviation.empty() ? "NO" : "no " + row.deviation;
}

std::string Fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

// A number as the tables print it: integers without a fraction, else up to six digits.
std::string Number(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  std::string text = fmt::format("{:.6f}", value);
  while (text.back() == '0') text.pop_back();
  return text;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

int ComparisonTable::compared() const {
  return static_cast<int>(
      std::count_if(rows.begin(), rows.end(), [](const ComparisonRow& r) { return r.compared; }));
}

int ComparisonTable::unexplained() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const ComparisonRow& r) {
    return r.compared && !r.match && r.deviation.empty();
  }));
}

int ComparisonTable::matched() const {
  return static_cast<int>(std::count_if(
      rows.begin(), rows.end(), [](const ComparisonRow& r) { return r.compared && r.match; }));
}

Result<Evaluation> EvaluateBuiltIn(std::string_view name, const ScheduleParams& params,
                                   StageCost cost, double latency, bool record_timeline) {
  PIPETTE_ASSIGN_OR_RETURN(Schedule schedule, MakeSchedule(name, params));
  PIPETTE_ASSIGN_OR_RETURN(Program program, Lower(schedule));
  EvaluateOptions options;
  options.p2p_latency = latency;
  options.record_timeline = record_timeline;
  return Evaluate(program, Costs::Uniform(schedule.num_stages(), cost), options);
}

// ---------------------------------------------------------------------------------------------
// Zero Bubble

const std::vector<std::string>& ZeroBubbleColumns() {
  static const std::vector<std::string> columns = {"1F1B",  "1F1B-I", "ZB-H1",
                                                   "ZB-H2", "ZB-1p",  "ZB-2p"};
  return columns;
}

namespace {

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
    PIPETTE_ASSIGN_OR_RETURN(Evaluation e, EvaluateBuiltIn("1f1b", flat, s.cost, s.comm));
    return e.makespan;
  }
  if (column == "1F1B-I") {
    const double v = s.interleaved_v;
    const StageCost chunk{s.cost.f / v, s.cost.i / v, s.cost.w / v};
    PIPETTE_ASSIGN_OR_RETURN(
        Evaluation e, EvaluateBuiltIn("interleaved-1f1b",
                                      ScheduleParams{s.p, s.interleaved_v, s.m, 0}, chunk, s.comm));
    return e.makespan;
  }
  if (column == "ZB-H1") {
    PIPETTE_ASSIGN_OR_RETURN(Evaluation e, EvaluateBuiltIn("zb-h1", flat, s.cost, s.comm));
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Megatron: (p-1)/(v*m) of interleaved-1f1b, idle over ideal.

namespace {

constexpr std::string_view kMegatronFormula = "(p-1)/(v*m)";

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
        PIPETTE_ASSIGN_OR_RETURN(Evaluation e,
                                 EvaluateBuiltIn("interleaved-1f1b", ScheduleParams{p, v, m, 0},
                                                 StageCost{1, 1, 1}, 0.0));
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// DualPipe README: closed forms against 1f1b, zb-h1, dualpipe, dualpipe-v.

namespace {

struct DualPipeMethod {
  std::string_view method;                                    // the README's name
  std::string_view schedule;                                  // pipette's
  std::string_view bubble, parameters, activations, devices;  // the README's cells
};

constexpr DualPipeMethod kDualPipeMethods[] = {
    {"1F1B", "1f1b", "(PP-1)(F+B)", "1x", "PP", "PP"},
    {"ZB1P", "zb-h1", "(PP-1)(F+B-2W)", "1x", "PP", "PP"},
    {"DualPipe", "dualpipe", "(PP/2-1)(F&B+B-3W)", "2x", "PP+1", "PP"},
    {"DualPipeV", "dualpipe-v", "(PP/2-1)(F&B+B-3W)", "2x", "PP+1", "PP/2"},
};

int ReadmeParameters(std::string_view text) { return text == "2x" ? 2 : 1; }
int ReadmeActivations(std::string_view text, int pp) { return text == "PP+1" ? pp + 1 : pp; }
int ReadmeDevices(std::string_view text, int pp) { return text == "PP/2" ? pp / 2 : pp; }

Status CheckDualPipeFile(const DataFile& file) {
  const std::size_t n = std::size(kDualPipeMethods);
  if (file.rows.size() != n) {
    return FileError(file, 0,
                     fmt::format("{} methods: must be the README's {}", file.rows.size(), n));
  }
  for (std::size_t r = 0; r < n; ++r) {
    const DualPipeMethod& d = kDualPipeMethods[r];
    const std::vector<std::string> expected = {std::string(d.method), std::string(d.bubble),
                                               std::string(d.parameters),
                                               std::string(d.activations), std::string(d.devices)};
    if (file.rows[r] != expected) {
      return FileError(file, file.lines[r],
                       fmt::format("must be '{}', the row pipette checks",
                                   fmt::format("{}", fmt::join(expected, ","))));
    }
  }
  return Status::Ok();
}

// Three cost sets at which every README closed form is exact for pipette's schedules (F = I >= W),
// and one (F = 1, I = 2, W = 1) at which the DualPipe form is only an estimate.
constexpr StageCost kDualPipeCosts[] = {{1, 1, 1}, {2, 2, 1}, {1, 1, 0.5}, {1, 2, 1}};

Result<ComparisonRow> DualPipeRow(const DualPipeMethod& d, int p, int m, StageCost cost) {
  PIPETTE_ASSIGN_OR_RETURN(DualPipeMeasure got, MeasureDualPipeRow(d.schedule, p, m, cost));
  const double bubble = DualPipeReadmeBubble(d.method, got.pp, cost);
  const int parameters = ReadmeParameters(d.parameters);
  const int activations = ReadmeActivations(d.activations, got.pp);
  const int devices = ReadmeDevices(d.devices, got.pp);
  ComparisonRow row;
  row.match = std::fabs(bubble - got.bubble) <= 1e-9 * std::max(1.0, bubble) &&
              parameters == got.parameters && activations == got.activations &&
              devices == got.devices;
  if (!row.match && d.bubble == kDualPipeMethods[2].bubble && cost.f != cost.i) {
    row.deviation = "(b)";
  }
  row.cells = {std::string(d.method),
               std::string(d.schedule),
               std::to_string(p),
               std::to_string(got.pp),
               std::to_string(m),
               fmt::format("F={} B={} W={} F&B={}", Number(cost.f), Number(cost.b()),
                           Number(cost.w), Number(cost.f + cost.b())),
               Number(bubble),
               Number(got.bubble),
               fmt::format("{}x", parameters),
               fmt::format("{}x", got.parameters),
               std::to_string(activations),
               std::to_string(got.activations),
               std::to_string(devices),
               std::to_string(got.devices),
               MatchCell(row)};
  return row;
}

Result<ComparisonTable> DualPipeComparison(const std::string& dir) {
  PIPETTE_ASSIGN_OR_RETURN(DataFile file, ReadDataFile(dir, "dualpipe_comparison.csv",
                                                       {"method", "bubble", "parameter_per_device",
                                                        "activation_per_device", "devices"}));
  PIPETTE_RETURN_IF_ERROR(CheckDualPipeFile(file));
  ComparisonTable table;
  table.name = "dualpipe";
  table.notes = {
      "Published: deepseek-ai/DualPipe README (3da1bbe), Pipeline Bubbles and Memory Usage "
      "Comparison; its 1F1B, ZB1P and DualPipe rows are DeepSeek-V3 report (arXiv:2412.19437) "
      "Table 2 (experiments/papers/dualpipe_comparison.csv).",
      "Definitions: bubble = absolute idle time of a device, makespan - its compute; parameters "
      "and activations per device in units of one of the PP stages a microbatch passes (PP = p "
      "for 1F1B, ZB1P and DualPipe, 2p for DualPipeV); B = I + W is the full backward.",
      "F&B (two overlapped chunks) is F + B in pipette, which gives overlap no benefit: an upper "
      "bound on the README's F&B, substituted into its formulas.",
      "ZB1P is pipette's zb-h1: (PP-1)(F+B-2W) is ZB-H1's bubble (ZB paper Table 2), and ZB "
      "Table 5 gives ZB-1p ZB-H1's bubble rate in all 12 settings.",
      "Costs (per chunk): three sets with F = I >= W, where every form is exact, and F = 1, "
      "I = 2, W = 1 (B = 3).",
      "(b) With F != I the DualPipe form (PP/2-1)(F&B+B-3W) is an estimate: at F = 1, I = 2, "
      "W = 1 the evaluated DualPipe and DualPipeV leave 1 time unit less bubble than the form "
      "at every p and m here (dualpipe p = 2 has none either way). 1F1B's form is exact at any "
      "costs, ZB1P's whenever W <= min(F, I)."};
  table.header = {"method",       "schedule", "p",           "PP",     "m",        "costs",
                  "bubble_form",  "bubble",   "params_form", "params", "act_form", "act",
                  "devices_form", "devices",  "match"};
  for (const DualPipeMethod& d : kDualPipeMethods) {
    for (StageCost cost : kDualPipeCosts) {
      for (int p : {2, 4, 6, 8}) {
        for (int k : {2, 4}) {
          PIPETTE_ASSIGN_OR_RETURN(ComparisonRow row, DualPipeRow(d, p, k * p, cost));
          table.rows.push_back(std::move(row));
        }
      }
    }
  }
  return table;
}

}  // namespace

Result<DualPipeMeasure> MeasureDualPipeRow(std::string_view schedule, int p, int m,
                                           StageCost cost) {
  PIPETTE_ASSIGN_OR_RETURN(Schedule s, MakeSchedule(schedule, ScheduleParams{p, 0, m, 0}));
  PIPETTE_ASSIGN_OR_RETURN(Program program, Lower(s));
  PIPETTE_ASSIGN_OR_RETURN(Evaluation e, Evaluate(program, Costs::Uniform(s.num_stages(), cost)));
  DualPipeMeasure out;
  out.devices = p;
  out.pp = s.routes.front().last - s.routes.front().first + 1;
  out.bubble = e.makespan - *std::max_element(e.busy.begin(), e.busy.end());
  for (int r = 0; r < p; ++r) {
    out.parameters = std::max(out.parameters, static_cast<int>(s.placement.StagesOf(r).size()));
  }
  out.activations = *std::max_element(e.peak_activations.begin(), e.peak_activations.end());
  return out;
}

double DualPipeReadmeBubble(std::string_view method, int pp, StageCost cost) {
  const double f = cost.f, b = cost.b(), w = cost.w, fb = cost.f + cost.b();
  if (method == "1F1B") return (pp - 1) * (f + b);
  if (method == "ZB1P") return (pp - 1) * (f + b - 2 * w);
  return (pp / 2.0 - 1) * (fb + b - 3 * w);
}

// ---------------------------------------------------------------------------------------------

const std::vector<std::string>& PaperTableNames() {
  static const std::vector<std::string> names = {"zero-bubble", "megatron", "dualpipe"};
  return names;
}

Result<ComparisonTable> BuildComparison(std::string_view name, const std::string& dir) {
  if (name == "zero-bubble") return ZeroBubbleComparison(dir);
  if (name == "megatron") return MegatronComparison(dir);
  if (name == "dualpipe") return DualPipeComparison(dir);
  return Status::NotFound(fmt::format("unknown paper table '{}': must be one of {}",
                                      Printable(name),
                                      fmt::format("{}", fmt::join(PaperTableNames(), ", "))));
}

namespace {

std::string CsvCell(const std::string& cell) {
  if (cell.find_first_of(",\"") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string Summary(const ComparisonTable& t) {
  const int explained = t.compared() - t.matched() - t.unexplained();
  return fmt::format(
      "{} of {} compared cells match, {} differ for the documented reason, {} differ without one "
      "({} typed in without a pipette counterpart)",
      t.matched(), t.compared(), explained, t.unexplained(),
      static_cast<int>(t.rows.size()) - t.compared());
}

}  // namespace

std::string FormatMarkdown(const ComparisonTable& table) {
  std::string out;
  for (const std::string& note : table.notes) out += "- " + note + "\n";
  out += "\n| " + fmt::format("{}", fmt::join(table.header, " | ")) + " |\n|";
  for (std::size_t c = 0; c < table.header.size(); ++c) out += "---|";
  out += "\n";
  for (const ComparisonRow& row : table.rows) {
    std::string line = "|";
    for (const std::string& cell : row.cells) {
      std::string escaped;
      for (char ch : cell) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
      line += " " + escaped + " |";
    }
    out += line + "\n";
  }
  return out + "\n" + Summary(table) + ".\n";
}

std::string FormatCsv(const ComparisonTable& table) {
  std::string out;
  for (const std::string& note : table.notes) out += "# " + note + "\n";
  out += "# " + Summary(table) + "\n";
  std::vector<std::string> cells;
  for (const std::string& h : table.header) cells.push_back(CsvCell(h));
  out += fmt::format("{}", fmt::join(cells, ",")) + "\n";
  for (const ComparisonRow& row : table.rows) {
    cells.clear();
    for (const std::string& c : row.cells) cells.push_back(CsvCell(c));
    out += fmt::format("{}", fmt::join(cells, ",")) + "\n";
  }
  return out;
}

}  // namespace pipette::cli
