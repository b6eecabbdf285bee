#include "cli/train_report.h"

#include <fmt/core.h>

#include <iostream>

#include "cli/exit_code.h"
#include "pipette/common/printable.h"
#include "pipette/store/training_run.h"

namespace pipette::cli {

TrainingReportSettings SettingsOf(const TrainCommandOptions& o) {
  return {o.engine, o.train.virtual_ranks, o.train.steps, o.tolerance};
}

// Rank 0's recording and output after training; returns the exit code.
int Report(const TrainCommandOptions& o, const TrainPlan& plan, const TrainReport& r,
           RunRecorder& recorder) {
  const bool verified = Verified(r, o.tolerance);
  const Status recorded = recorder.Finish(TrainingRunData(plan, r, o.train.virtual_ranks),
                                          verified ? kRunOk : kRunFailed);
  if (!recorded.ok()) {
    (void)ReportError("train", recorded);
    return kExitFailure;
  }
  if (o.format == "json") {
    nlohmann::ordered_json json = TrainingJson(SettingsOf(o), plan, r);
    if (recorder.enabled()) {
      json["run_id"] = recorder.run_id();
      json["db"] = recorder.path();
    }
    std::cout << json.dump() << std::endl;
  } else {
    std::cout << TrainingSummary(r, o.tolerance);
    if (recorder.enabled()) {
      fmt::print("# recorded as run {} in {}\n", recorder.run_id(), Printable(recorder.path()));
    }
  }
  if (!verified) {
    fmt::print(stderr,
               "pipette train: the pipelined run differs from the unpipelined reference by more "
               "than {:g} (gradients {:.3g}, parameters {:.3g})\n",
               o.tolerance, r.verification->gradients.max_relative_error,
               r.verification->parameters.global_relative_error);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace pipette::cli
