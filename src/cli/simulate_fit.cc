// `pipette simulate --fit ID|latest`: a configuration of a real engine priced by a fitted cost
// model (fidelity/cost_fit.h, study/prediction.h PlanFitPrediction): the options that say what
// runs, or with --costs-from RUN the measured run's own configuration (the prediction is then
// compared with RUN).
#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "cli/simulate_options.h"
#include "pipette/store/db_access.h"
#include "pipette/store/experiment_db.h"
#include "pipette/study/prediction.h"
#include "pipette/study/simulation_report.h"

namespace pipette::cli {
namespace {

int FitFail(const Status& status) { return ReportError("simulate", status); }

// The options a fitted prediction reads: what runs (the engine's training options), the steps,
// the calibration and cores, the output. Anything else would be taken silently.
constexpr const char* kFitOptions[] = {"fit",
                                       "costs-from",
                                       "calibration",
                                       "cores",
                                       "model",
                                       "schedule",
                                       "pp",
                                       "chunks",
                                       "microbatches",
                                       "dp",
                                       "micro-batch-size",
                                       "seq-len",
                                       "steps",
                                       "format",
                                       "db",
                                       "no-db",
                                       "experiment",
                                       "point-key",
                                       "trace"};

Status CheckFitOptions(const SimulateOptions& o) {
  const bool of_run = o.costs_from_option->count() > 0;
  for (const CLI::Option* given : o.command->get_options()) {
    if (given->count() == 0 || given->get_lnames().empty()) continue;
    const std::string& name = given->get_lnames().front();
    const bool takes =
        std::find(std::begin(kFitOptions), std::end(kFitOptions), name) != std::end(kFitOptions);
    const bool program = given->get_group() == kProgramGroup || given->get_group() == kModelGroup;
    if (takes && !(of_run && program)) continue;
    if (of_run && program && takes) {
      return Status::InvalidArgument(
          fmt::format("--{} with --fit and --costs-from = {}: the configuration is the run's", name,
                      o.costs_from));
    }
    return Status::InvalidArgument(fmt::format(
        "--{} with --fit = {}: a fit models one engine on the host it measured (its cluster, "
        "dtype and efficiency); only the configuration (--model, --schedule, -p, -v, -m, --dp, "
        "--micro-batch-size, --seq-len, --steps), --calibration, --cores and the output apply",
        name, Printable(o.fit)));
  }
  return Status::Ok();
}

// The engine's options of the configuration: the run's, or the ones given (the train command's
// defaults where not given: micro-batch size 4, the model's context length).
Result<TrainOptions> OptionsOf(const SimulateOptions& o, const CostFit& fit, ExperimentDb& db) {
  if (o.costs_from_option->count() > 0) {
    const std::string option = fmt::format("--costs-from = {}", o.costs_from);
    Result<RunData> run = db.LoadRun(o.costs_from, /*with_events=*/false);
    if (!run.ok() && run.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument(
          fmt::format("{}: no such run in '{}'", option, Printable(o.record.db)));
    }
    if (!run.ok()) return run.status();
    return TrainOptionsOf(*run, option);
  }
  if (o.command->get_option("--model")->count() == 0) {
    return Status::InvalidArgument(fmt::format(
        "--fit = {}: give the configuration's --model (a preset or .toml the engine trains), or "
        "--costs-from RUN for a measured run's",
        Printable(o.fit)));
  }
  TrainOptions t;
  t.model = o.model;
  t.schedule = o.schedule;
  t.p = o.params.p;
  t.v = o.params.v;
  t.m = o.params.m;
  t.dp = o.dp;
  t.steps = o.steps;
  t.trace_steps = o.steps;
  t.micro_batch_size =
      o.command->get_option("--micro-batch-size")->count() > 0 ? o.micro_batch_size : 4;
  t.seq_len = o.seq_len_option->count() > 0 ? o.seq_len : 0;
  t.dtype = fit.family.dtype;
  return t;
}

}  // namespace

int RunFitPrediction(const SimulateOptions& o) {
  if (Status checked = CheckFitOptions(o); !checked.ok()) return FitFail(checked);
  if (Result<std::int64_t> id = ParseFitName(o.fit, "--fit"); !id.ok()) return FitFail(id.status());
  PredictionSettings settings;
  TrainOptions options;
  CostFit fit;
  Status read = [&]() -> Status {
    PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, OpenExistingDb(o.record.db));
    PIPETTE_ASSIGN_OR_RETURN(fit, FindFit(db, o.fit, "--fit"));
    if (!o.calibration.empty()) {
      PIPETTE_ASSIGN_OR_RETURN(const Calibration c, FindCalibration(db, o.calibration));
      ApplyCalibration(c, settings);
    }
    PIPETTE_ASSIGN_OR_RETURN(options, OptionsOf(o, fit, db));
    return Status::Ok();
  }();
  if (!read.ok()) return FitFail(read);
  if (o.cores >= 0) settings.cores = o.cores;
  const int steps = o.costs_from_option->count() > 0 ? std::max(1, options.trace_steps) : o.steps;
  const std::int64_t of_run = o.costs_from_option->count() > 0 ? o.costs_from : 0;
  Result<CostsFromPlan> plan = PlanFitPrediction(fit, options, settings, steps, of_run);
  if (!plan.ok()) return FitFail(plan.status());
  const SimulationCase one = CaseOf(*plan);
  return RecordAndPrint<CostsFromReport>(o, nlohmann::ordered_json(ConfigOf(*plan)),
                                         [&] { return PredictRun(*plan, one); });
}

}  // namespace pipette::cli
