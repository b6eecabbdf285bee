// `pipette import pytorch TRACE... [--schedule NAME|csv:FILE] [-p P] [-v V] [-m M] [--dp D]
// [--model NAME|FILE] [--db FILE] [--experiment NAME] [--format text|json]`: one run of PyTorch's
// pipelining, read from its profiler traces (one per rank) and recorded as a run with engine
// "pytorch" (import/pytorch_import.h; docs/import.md).
#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/import/chrome_trace.h"
#include "pipette/import/pytorch_import.h"

namespace pipette::cli {
namespace {

struct ImportOptions {
  std::vector<std::string> traces;
  PyTorchImportOptions import;
  RecordOptions record;
  std::string format = "text";
};

void Print(const ImportOptions& o, const ImportedRun& run, std::int64_t id) {
  const ImportedRunConfig& c = run.config;
  if (o.format == "json") {
    nlohmann::ordered_json out = {{"run", id},
                                  {"db", o.record.db},
                                  {"config", c},
                                  {"events", run.data.events.size()},
                                  {"step_time_s", run.data.Metric("step_time_s")},
                                  {"host_timed_computes", run.host_timed_computes}};
    std::cout << out.dump() << std::endl;
    return;
  }
  fmt::print("# pipette import pytorch: {} traces, {} clock, '{}' ranges\n", c.traces.size(),
             c.clock, c.annotations);
  fmt::print("# schedule {} ({}) p={} v={} m={} dp={}, {} steps, {} events\n", c.schedule,
             c.schedule_from, c.p, c.v, c.m, c.dp, c.steps, run.data.events.size());
  if (run.host_timed_computes > 0) {
    fmt::print("# {} computes launched no kernel: timed by their host range\n",
               run.host_timed_computes);
  }
  fmt::print("# {:>4}  {:>12}\n", "step", "time [ms]");
  for (int s = 0; s < c.steps; ++s) {
    fmt::print("  {:>4}  {:>12.3f}\n", s,
               run.data.Metric(fmt::format("step_times_s[{}]", s)) * 1e3);
  }
  fmt::print("# recorded as run {} in {}\n", id, o.record.db);
}

int RunImport(const ImportOptions& o) {
  auto fail = [](const Status& status) { return ReportError("import pytorch", status); };
  std::vector<ChromeTrace> traces;
  for (const std::string& path : o.traces) {
    Result<ChromeTrace> trace = ReadChromeTrace(path);
    if (!trace.ok()) return fail(trace.status());
    traces.push_back(std::move(*trace));
  }
  Result<ImportedRun> run = ImportPyTorchRun(traces, o.import);
  if (!run.ok()) return fail(run.status());
  // Recorded only once the whole run is read: a bad trace leaves the database as it was.
  Result<RunRecorder> recorder =
      BeginRecording(o.record, "pytorch", nlohmann::ordered_json(run->config));
  if (!recorder.ok()) return fail(recorder.status());
  if (recorder->held()) return ReportPointHeld("import pytorch", o.record, *recorder, false);
  Status finished = recorder->Finish(run->data, kRunOk);
  if (!finished.ok()) return fail(finished);
  Print(o, *run, recorder->run_id());
  return kExitOk;
}

}  // namespace

void RegisterImportCommands(CLI::App& app, int& exit_code) {
  CLI::App* import = app.add_subcommand(
      "import", "Import a run measured by another framework (pytorch: its profiler traces)");
  import->require_subcommand(1);
  auto o = std::make_shared<ImportOptions>();
  CLI::App* pytorch = import->add_subcommand(
      "pytorch",
      "Record a run of torch.distributed.pipelining from its profiler traces (one per rank; "
      "docs/import.md)");
  pytorch->add_option("traces", o->traces, "Chrome traces (export_chrome_trace), plain or gzip")
      ->required()
      ->check(CLI::ExistingFile);
  pytorch->add_option("--schedule", o->import.schedule,
                      "The schedule it ran: a built-in name or csv:FILE (default: inferred from "
                      "the order of the computes)");
  pytorch->add_option("-p", o->import.p, "Pipeline ranks (default: the traces')")
      ->check(CLI::Range(1, 1 << 20));
  pytorch->add_option("-v", o->import.v, "Stages per rank (default: the traces')")
      ->check(CLI::Range(1, 1 << 20));
  pytorch->add_option("-m", o->import.m, "Microbatches per step (default: the traces')")
      ->check(CLI::Range(1, 1 << 20));
  pytorch
      ->add_option("--dp", o->import.dp,
                   "Data-parallel replicas (default: the traces', ranks whose computes name "
                   "the same lowest stage)")
      ->check(CLI::Range(1, 1 << 20));
  pytorch->add_option("--model", o->import.model, "The model it trained (recorded in the run)");
  pytorch->add_option("--db", o->record.db, "Experiment database")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  pytorch->add_option("--experiment", o->record.experiment, "Record the run in this experiment");
  pytorch->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  pytorch->callback([o, &exit_code] { exit_code = RunImport(*o); });
}

}  // namespace pipette::cli
