#include "pipette/papers/dualpipe.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>
#include <vector>

#include "pipette/papers/paper_data.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {

using paper_data::DataFile;
using paper_data::FileError;
using paper_data::MatchCell;
using paper_data::Number;
using paper_data::ReadDataFile;

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

}  // namespace

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

}  // namespace pipette
