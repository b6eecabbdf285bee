#include "pipette/report/comparison_report.h"

#include <fmt/core.h>

#include "pipette/common/printable.h"
#include "pipette/store/run_config.h"

namespace pipette {
namespace {

std::string Percent(double fraction) { return fmt::format("{:+.2f}", 100 * fraction); }

std::string ProgramSummary(const RunData& run) {
  const RecordedConfig config = ReadRunConfig(run.run.config);
  std::string summary;
  for (const RunKey key : kProgramSummaryKeys) {
    const nlohmann::ordered_json* value = config.Find(key);
    if (value == nullptr) continue;
    summary +=
        fmt::format(" {}={}", NameOf(key),
                    value->is_string() ? Printable(value->get<std::string>()) : value->dump());
  }
  return summary.empty() ? " (no schedule in the configuration)" : summary;
}

void AddHeader(std::string& out, const RunComparison& c, const RunData& predicted,
               std::string_view db) {
  out += fmt::format(
      "# pipette compare: run {} ({}, predicted) against run {} ({}, measured) in {}\n",
      c.predicted_run, c.predicted_engine, c.measured_run, c.measured_engine, Printable(db));
  out += fmt::format(
      "# program:{}; {} events joined by (replica, rank, step, instr_id, kind), replica 0\n",
      ProgramSummary(predicted), c.pairs);
  out += fmt::format(
      "# errors are predicted - measured; starts within their step (origin: the step's earliest "
      "event start)\n");
  if (c.step_time) {
    out +=
        fmt::format("step time (step_time_s): predicted {:.4f} ms, measured {:.4f} ms, error {}%\n",
                    c.step_time->predicted_s * 1e3, c.step_time->measured_s * 1e3,
                    Percent(c.step_time->error_rel));
  } else {
    out += fmt::format("step time (step_time_s): not recorded by both runs\n");
  }
  out += fmt::format("\n# traced steps: span from the step's origin to its last event end\n");
  out += fmt::format("# {:>4}  {:>14}  {:>13}  {:>8}\n", "step", "predicted [ms]", "measured [ms]",
                     "error [%]");
  for (const StepSpan& s : c.steps) {
    out += fmt::format("  {:>4}  {:>14.4f}  {:>13.4f}  {:>9}\n", s.step, s.predicted_s * 1e3,
                       s.measured_s * 1e3, Percent(s.error_rel));
  }
}

void AddKindRow(std::string& out, std::string_view name, const KindErrors& k) {
  out += fmt::format(
      "  {:<9}  {:>6}  {:>9.4f}  {:>9.4f}  {:>9.3f}  {:>9.3f}  {:>8.2f}  {:>8.2f}  {:>9}\n", name,
      k.count, k.start_abs_s.median * 1e3, k.start_abs_s.p90 * 1e3, 100 * k.start_abs_frac.median,
      100 * k.start_abs_frac.p90, 100 * k.duration_abs_rel.median, 100 * k.duration_abs_rel.p90,
      k.duration_abs_rel.count == 0 ? std::string("-") : Percent(k.duration_signed_median_rel));
}

void AddKinds(std::string& out, const RunComparison& c) {
  out += fmt::format(
      "\n# per kind: |start error| in ms and in % of the measured step span; |duration error| in "
      "% of the\n# measured duration (measured duration > 0 only); median (med) and 90th "
      "percentile (p90);\n# bias: the median signed duration error\n");
  out += fmt::format("# {:<9}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>8}  {:>9}\n", "kind",
                     "events", "start_med", "start_p90", "start_med", "start_p90", "dur_med",
                     "dur_p90", "dur_bias");
  out += fmt::format("# {:<9}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>8}  {:>9}\n", "", "",
                     "[ms]", "[ms]", "[%]", "[%]", "[%]", "[%]", "[%]");
  for (const KindErrors& k : c.kinds) AddKindRow(out, EventKindName(k.kind), k);
  AddKindRow(out, "all", c.all);
}

void AddWorst(std::string& out, const RunComparison& c) {
  out += fmt::format(
      "\n# the {} worst events: largest max(|start error|, |end error|) first; times in ms from "
      "the step's origin\n",
      c.worst.size());
  out += fmt::format(
      "# {:>4}  {:>4}  {:>5}  {:<9}  {:>5}  {:>4}  {:>10}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n",
      "rank", "step", "instr", "kind", "stage", "mb", "pred_start", "meas_start", "pred_dur",
      "meas_dur", "start_err", "dur_err");
  out += fmt::format(
      "# {:>4}  {:>4}  {:>5}  {:<9}  {:>5}  {:>4}  {:>10}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n",
      "", "", "", "", "", "", "[ms]", "[ms]", "[ms]", "[ms]", "[ms]", "[%]");
  for (const EventPair& p : c.worst) {
    out += fmt::format(
        "  {:>4}  {:>4}  {:>5}  {:<9}  {:>5}  {:>4}  {:>10.4f}  {:>10.4f}  {:>9.4f}  {:>9.4f}  "
        "{:>+9.4f}  {:>9}\n",
        p.key.rank, p.key.step, p.key.instr_id, EventKindName(p.key.kind), p.stage, p.microbatch,
        p.predicted_start_s * 1e3, p.measured_start_s * 1e3, p.predicted_duration_s * 1e3,
        p.measured_duration_s * 1e3, p.start_error_s * 1e3,
        p.duration_error_rel ? Percent(*p.duration_error_rel) : std::string("-"));
  }
}

void AddMemory(std::string& out, const RunComparison& c) {
  out += fmt::format("\n# peak memory per rank (peak_memory_bytes[r])\n");
  if (c.memory.empty()) {
    out += fmt::format("# not recorded by both runs\n");
    return;
  }
  out += fmt::format("# {:>4}  {:>14}  {:>13}  {:>9}\n", "rank", "predicted [GB]", "measured [GB]",
                     "error [%]");
  for (const RankPeakMemory& m : c.memory) {
    out += fmt::format("  {:>4}  {:>14.6f}  {:>13.6f}  {:>9}\n", m.rank, m.predicted_bytes / 1e9,
                       m.measured_bytes / 1e9, Percent(m.error_rel));
  }
}

}  // namespace

std::string ComparisonText(const RunComparison& c, const RunData& predicted, std::string_view db) {
  std::string out;
  AddHeader(out, c, predicted, db);
  AddKinds(out, c);
  AddWorst(out, c);
  AddMemory(out, c);
  return out;
}

namespace {

nlohmann::ordered_json StatsJson(const ErrorStats& s) {
  return {{"count", s.count}, {"median", s.median}, {"p90", s.p90}};
}

nlohmann::ordered_json KindJson(const KindErrors& k) {
  return {{"count", k.count},
          {"start_abs_s", StatsJson(k.start_abs_s)},
          {"start_abs_frac", StatsJson(k.start_abs_frac)},
          {"duration_abs_rel", StatsJson(k.duration_abs_rel)},
          {"duration_signed_median_rel", k.duration_signed_median_rel},
          {"duration_abs_s", StatsJson(k.duration_abs_s)}};
}

nlohmann::ordered_json PairJson(const EventPair& p) {
  nlohmann::ordered_json j = {{"replica", p.key.replica},
                              {"rank", p.key.rank},
                              {"step", p.key.step},
                              {"instr_id", p.key.instr_id},
                              {"kind", EventKindName(p.key.kind)},
                              {"stage", p.stage},
                              {"microbatch", p.microbatch},
                              {"predicted_start_s", p.predicted_start_s},
                              {"measured_start_s", p.measured_start_s},
                              {"predicted_duration_s", p.predicted_duration_s},
                              {"measured_duration_s", p.measured_duration_s},
                              {"start_error_s", p.start_error_s},
                              {"start_error_frac", p.start_error_frac},
                              {"duration_error_s", p.duration_error_s},
                              {"duration_error_rel", nullptr},
                              {"displacement_s", p.displacement_s()}};
  if (p.duration_error_rel) j["duration_error_rel"] = *p.duration_error_rel;
  return j;
}

}  // namespace

nlohmann::ordered_json ComparisonJson(const RunComparison& c) {
  nlohmann::ordered_json j;
  j["predicted"] = {{"run", c.predicted_run}, {"engine", c.predicted_engine}};
  j["measured"] = {{"run", c.measured_run}, {"engine", c.measured_engine}};
  j["pairs"] = c.pairs;
  j["step_time"] = nullptr;
  if (c.step_time) {
    j["step_time"] = {{"predicted_s", c.step_time->predicted_s},
                      {"measured_s", c.step_time->measured_s},
                      {"error_rel", c.step_time->error_rel}};
  }
  j["steps"] = nlohmann::ordered_json::array();
  for (const StepSpan& s : c.steps) {
    j["steps"].push_back({{"step", s.step},
                          {"predicted_s", s.predicted_s},
                          {"measured_s", s.measured_s},
                          {"error_rel", s.error_rel}});
  }
  j["kinds"] = nlohmann::ordered_json::object();
  for (const KindErrors& k : c.kinds) j["kinds"][std::string(EventKindName(k.kind))] = KindJson(k);
  j["all"] = KindJson(c.all);
  j["worst"] = nlohmann::ordered_json::array();
  for (const EventPair& p : c.worst) j["worst"].push_back(PairJson(p));
  j["peak_memory"] = nlohmann::ordered_json::array();
  for (const RankPeakMemory& m : c.memory) {
    j["peak_memory"].push_back({{"rank", m.rank},
                                {"predicted_bytes", m.predicted_bytes},
                                {"measured_bytes", m.measured_bytes},
                                {"error_rel", m.error_rel}});
  }
  return j;
}

}  // namespace pipette
