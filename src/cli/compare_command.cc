// `pipette compare A B [--db FILE] [--format text|json] [--worst N]`: a predicted (simulated) and
// a measured run of the same program joined event by event (fidelity/run_compare.h): the step time
// of each and its error, per event kind the median and 90th percentile of the start and duration
// errors, the worst instructions and peak memory per rank. A sim run is always the prediction;
// two runs of one engine compare A (predicted) against B (measured). Runs of different programs
// are refused (exit 2).
#include <fmt/core.h>

#include <charconv>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/compare_experiment.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "cli/store_options.h"
#include "pipette/common/printable.h"
#include "pipette/fidelity/run_compare.h"
#include "pipette/store/run_config.h"

namespace pipette::cli {
namespace {

struct CompareOptions {
  std::string a, b;
  std::string experiment;  // instead of a, b
  std::string db = "pipette.db";
  std::string format = "text";
  int worst = 10;
};

Result<std::int64_t> ParseRunId(std::string_view name, const std::string& text) {
  std::int64_t id = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, id);
  if (text.empty() || error != std::errc() || ptr != end || id < 1) {
    return Status::InvalidArgument(
        fmt::format("run {} = '{}': must be a run id (a whole number "
                    ">= 1, as `pipette runs` lists them)",
                    name, Printable(text)));
  }
  return id;
}

// Run `id` with its events; NotFound naming the positional argument when there is no such run.
Result<RunData> Load(ExperimentDb& db, std::string_view name, std::int64_t id,
                     const std::string& path) {
  Result<RunData> run = db.LoadRun(id);
  if (!run.ok() && run.status().code() == StatusCode::kNotFound) {
    return Status::NotFound(fmt::format(
        "run {} = {}: no such run in '{}' (pipette runs lists them)", name, id, Printable(path)));
  }
  return run;
}

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

void PrintHeader(const RunComparison& c, const RunData& predicted, const std::string& db) {
  fmt::print("# pipette compare: run {} ({}, predicted) against run {} ({}, measured) in {}\n",
             c.predicted_run, c.predicted_engine, c.measured_run, c.measured_engine, Printable(db));
  fmt::print("# program:{}; {} events joined by (replica, rank, step, instr_id, kind), replica 0\n",
             ProgramSummary(predicted), c.pairs);
  fmt::print(
      "# errors are predicted - measured; starts within their step (origin: the step's earliest "
      "event start)\n");
  if (c.step_time) {
    fmt::print("step time (step_time_s): predicted {:.4f} ms, measured {:.4f} ms, error {}%\n",
               c.step_time->predicted_s * 1e3, c.step_time->measured_s * 1e3,
               Percent(c.step_time->error_rel));
  } else {
    fmt::print("step time (step_time_s): not recorded by both runs\n");
  }
  fmt::print("\n# traced steps: span from the step's origin to its last event end\n");
  fmt::print("# {:>4}  {:>14}  {:>13}  {:>8}\n", "step", "predicted [ms]", "measured [ms]",
             "error [%]");
  for (const StepSpan& s : c.steps) {
    fmt::print("  {:>4}  {:>14.4f}  {:>13.4f}  {:>9}\n", s.step, s.predicted_s * 1e3,
               s.measured_s * 1e3, Percent(s.error_rel));
  }
}

void PrintKindRow(std::string_view name, const KindErrors& k) {
  fmt::print(
      "  {:<9}  {:>6}  {:>9.4f}  {:>9.4f}  {:>9.3f}  {:>9.3f}  {:>8.2f}  {:>8.2f}  {:>9}\n", name,
      k.count, k.start_abs_s.median * 1e3, k.start_abs_s.p90 * 1e3, 100 * k.start_abs_frac.median,
      100 * k.start_abs_frac.p90, 100 * k.duration_abs_rel.median, 100 * k.duration_abs_rel.p90,
      k.duration_abs_rel.count == 0 ? std::string("-") : Percent(k.duration_signed_median_rel));
}

void PrintKinds(const RunComparison& c) {
  fmt::print(
      "\n# per kind: |start error| in ms and in % of the measured step span; |duration error| in "
      "% of the\n# measured duration (measured duration > 0 only); median (med) and 90th "
      "percentile (p90);\n# bias: the median signed duration error\n");
  fmt::print("# {:<9}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>8}  {:>9}\n", "kind", "events",
             "start_med", "start_p90", "start_med", "start_p90", "dur_med", "dur_p90", "dur_bias");
  fmt::print("# {:<9}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>8}  {:>9}\n", "", "", "[ms]",
             "[ms]", "[%]", "[%]", "[%]", "[%]", "[%]");
  for (const KindErrors& k : c.kinds) PrintKindRow(EventKindName(k.kind), k);
  PrintKindRow("all", c.all);
}

void PrintWorst(const RunComparison& c) {
  fmt::print(
      "\n# the {} worst events: largest max(|start error|, |end error|) first; times in ms from "
      "the step's origin\n",
      c.worst.size());
  fmt::print(
      "# {:>4}  {:>4}  {:>5}  {:<9}  {:>5}  {:>4}  {:>10}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n",
      "rank", "step", "instr", "kind", "stage", "mb", "pred_start", "meas_start", "pred_dur",
      "meas_dur", "start_err", "dur_err");
  fmt::print(
      "# {:>4}  {:>4}  {:>5}  {:<9}  {:>5}  {:>4}  {:>10}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n",
      "", "", "", "", "", "", "[ms]", "[ms]", "[ms]", "[ms]", "[ms]", "[%]");
  for (const EventPair& p : c.worst) {
    fmt::print(
        "  {:>4}  {:>4}  {:>5}  {:<9}  {:>5}  {:>4}  {:>10.4f}  {:>10.4f}  {:>9.4f}  {:>9.4f}  "
        "{:>+9.4f}  {:>9}\n",
        p.key.rank, p.key.step, p.key.instr_id, EventKindName(p.key.kind), p.stage, p.microbatch,
        p.predicted_start_s * 1e3, p.measured_start_s * 1e3, p.predicted_duration_s * 1e3,
        p.measured_duration_s * 1e3, p.start_error_s * 1e3,
        p.duration_error_rel ? Percent(*p.duration_error_rel) : std::string("-"));
  }
}

void PrintMemory(const RunComparison& c) {
  fmt::print("\n# peak memory per rank (peak_memory_bytes[r])\n");
  if (c.memory.empty()) {
    fmt::print("# not recorded by both runs\n");
    return;
  }
  fmt::print("# {:>4}  {:>14}  {:>13}  {:>9}\n", "rank", "predicted [GB]", "measured [GB]",
             "error [%]");
  for (const RankPeakMemory& m : c.memory) {
    fmt::print("  {:>4}  {:>14.6f}  {:>13.6f}  {:>9}\n", m.rank, m.predicted_bytes / 1e9,
               m.measured_bytes / 1e9, Percent(m.error_rel));
  }
}

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

Status Compare(const CompareOptions& o) {
  if (!o.experiment.empty()) {
    if (!o.a.empty() || !o.b.empty()) {
      return Status::InvalidArgument(fmt::format(
          "--experiment = '{}' with runs A B: compare either two runs or an experiment's "
          "predictions",
          Printable(o.experiment)));
    }
    return CompareExperiment(o.db, o.experiment, o.format);
  }
  if (o.a.empty() || o.b.empty()) {
    return Status::InvalidArgument(
        "compare needs two runs A B (a prediction and a measurement) or --experiment NAME");
  }
  if (o.worst < 0) {
    return Status::InvalidArgument(fmt::format("--worst = {}: must be >= 0", o.worst));
  }
  PIPETTE_ASSIGN_OR_RETURN(std::int64_t a_id, ParseRunId("A", o.a));
  PIPETTE_ASSIGN_OR_RETURN(std::int64_t b_id, ParseRunId("B", o.b));
  PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, OpenExistingDb(o.db));
  PIPETTE_ASSIGN_OR_RETURN(RunData a, Load(db, "A", a_id, o.db));
  PIPETTE_ASSIGN_OR_RETURN(RunData b, Load(db, "B", b_id, o.db));
  const auto [predicted, measured] = OrderForComparison(a, b);
  PIPETTE_ASSIGN_OR_RETURN(RunComparison c, CompareRuns(*predicted, *measured, o.worst));
  if (o.format == "json") {
    std::cout << ComparisonJson(c).dump() << "\n";
    return Status::Ok();
  }
  PrintHeader(c, *predicted, o.db);
  PrintKinds(c);
  PrintWorst(c);
  PrintMemory(c);
  return Status::Ok();
}

}  // namespace

void RegisterCompareCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Join a simulated and a measured run of one program event by event; the errors");
  cmd->add_option("A", o->a, "Run id (a sim run is always the prediction)");
  cmd->add_option("B", o->b, "Run id (same engine as A: A predicts B)");
  cmd->add_option("--experiment", o->experiment,
                  "Instead of A B: every prediction of experiment NAME against its measured run "
                  "(step-time MAPE)")
      ->check(NonEmpty());
  cmd->add_option("--db", o->db, "Experiment database (opened read-only)")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--worst", o->worst, "How many of the worst events to list")
      ->capture_default_str();
  cmd->callback([o, &exit_code] {
    const Status s = Compare(*o);
    exit_code = s.ok() ? kExitOk : ReportError("compare", s);
  });
}

}  // namespace pipette::cli
