// `pipette simulate --costs-from RUN`: the prediction of a recorded real run (study/prediction.h),
// its checks and what the calibration and --cores add.
#include <fmt/core.h>

#include <string>

#include "cli/simulate_options.h"
#include "pipette/store/db_access.h"
#include "pipette/store/experiment_db.h"
#include "pipette/study/prediction.h"
#include "pipette/study/simulation_report.h"
#include "sim/simulator.h"

namespace pipette::cli {
namespace {

int CostsFromFail(const Status& status) { return ReportError("simulate", status); }

// What --calibration (or its absence) and --cores add to the run's measured compute.
Result<PredictionSettings> PredictionOf(const SimulateOptions& o, ExperimentDb& db) {
  // Unshared by default: a run's measured durations already carry whatever core sharing it had
  // (Open MPI's waiting ranks poll, so an oversubscribed run's every compute ran contended), and
  // sharing them again counts it twice (docs/fidelity.md). --cores N shares N cores.
  PredictionSettings settings;
  if (!o.calibration.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(const Calibration c, FindCalibration(db, o.calibration));
    ApplyCalibration(c, settings);
  }
  if (o.cores >= 0) settings.cores = o.cores;
  settings.alone = o.alone_costs;
  settings.statistic = o.cost_statistic == "mean" ? CostStatistic::kMean : CostStatistic::kMedian;
  return settings;
}

// The uneven work applied to a recorded run's measured costs: its lengths relative to the run's
// own seq_len (its configuration's), which --attention-share scales like --times.
Result<UnevenWork> UnevenOfRun(const SimulateOptions& o, const CostsFromPlan& plan) {
  PIPETTE_RETURN_IF_ERROR(CheckUnevenPrediction(plan, AnyUnevenWorkOption(o.uneven),
                                                !o.uneven.microbatch_seqlens.empty()));
  return ParseUnevenWorkOptions(o.uneven, plan.program.p, plan.program.m, RecordedSeqLen(plan));
}

}  // namespace

// Options that describe what --costs-from takes from the run (or, --cores, needs --costs-from).
Status CheckCostsFromOptions(const SimulateOptions& o) {
  if (o.costs_from_option->count() == 0) {
    if (o.cores_option->count() > 0) {
      return Status::InvalidArgument(fmt::format(
          "--cores = {}: applies only with --costs-from (the cores a CPU run's ranks share)",
          o.cores));
    }
    if (o.alone_costs) {
      return Status::InvalidArgument(
          "--alone-costs: applies only with --costs-from (a recorded run's durations)");
    }
    if (o.calibration_option->count() > 0) {
      return Status::InvalidArgument(
          fmt::format("--calibration = {}: applies only with --costs-from (pipette calibrate "
                      "measures a real engine's messages and overheads)",
                      Printable(o.calibration)));
    }
    return Status::Ok();
  }
  // Everything but where the run is and how the prediction is recorded comes from the run: only
  // the options of the prediction, uneven-work and output groups apply.
  for (const CLI::Option* given : o.command->get_options()) {
    if (given->count() == 0 || given->get_lnames().empty()) continue;
    const std::string& group = given->get_group();
    if (group == kPredictionGroup || group == kUnevenGroup || group == kOutputGroup) continue;
    return Status::InvalidArgument(fmt::format(
        "--{} with --costs-from = {}: the program, its model, costs and sizes are the recorded "
        "run's (only --calibration, --cores, --alone-costs, uneven work and where to record "
        "apply)",
        given->get_lnames().front(), o.costs_from));
  }
  if (o.alone_costs && o.cores <= 0) {
    return Status::InvalidArgument(fmt::format(
        "--alone-costs with --cores = {}: takes out the sharing of the cores the simulation "
        "shares again, so it needs --cores N >= 1 (1 for a --virtual-ranks run on one GPU)",
        o.cores_option->count() > 0 ? std::to_string(o.cores) : std::string("unset")));
  }
  return Status::Ok();
}

// --costs-from RUN: the recorded real run's program with its measured costs (study/prediction.h).
int RunCostsFrom(const SimulateOptions& o) {
  const std::string option = fmt::format("--costs-from = {}", o.costs_from);
  PredictionSettings settings;
  Result<RunData> run = [&]() -> Result<RunData> {
    PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, OpenExistingDb(o.record.db));
    PIPETTE_ASSIGN_OR_RETURN(settings, PredictionOf(o, db));
    Result<RunData> loaded = db.LoadRun(o.costs_from);
    if (!loaded.ok() && loaded.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument(
          fmt::format("{}: no such run in '{}'", option, Printable(o.record.db)));
    }
    return loaded;
  }();
  if (!run.ok()) return CostsFromFail(run.status());
  Result<CostsFromPlan> plan = PlanCostsFrom(*run, option, settings);
  if (!plan.ok()) return CostsFromFail(plan.status());
  Result<UnevenWork> uneven = UnevenOfRun(o, *plan);
  if (!uneven.ok()) return CostsFromFail(uneven.status());
  SimulationCase one = CaseOf(*plan);
  Result<Costs> costs =
      ApplyUnevenWork(one.costs, plan->schedule.placement, plan->program.m, *uneven);
  if (!costs.ok()) return CostsFromFail(costs.status());
  one.costs = std::move(*costs);
  one.sizes.microbatch_scale = SeqlenRatios(*uneven);
  one.link_slowdowns = uneven->link_slowdowns;
  return RecordAndPrint<CostsFromReport>(o, WithUneven(ConfigOf(*plan), *uneven),
                                         [&] { return PredictRun(*plan, one); });
}

}  // namespace pipette::cli
