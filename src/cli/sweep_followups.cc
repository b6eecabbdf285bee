#include "pipette/study/sweep_followups.h"

#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/exit_code.h"
#include "cli/sweep_command.h"
#include "pipette/store/db_access.h"

namespace pipette::cli {

int DryRun(const SweepSpec& spec, const SweepOptions& o, const std::vector<SweepPoint>& points) {
  // Reading never creates the database.
  std::vector<std::optional<std::int64_t>> done(points.size());
  std::error_code error;
  if (std::filesystem::exists(o.db, error)) {
    Result<ExperimentDb> db = OpenExistingDb(o.db);
    if (!db.ok()) return ReportError("sweep", db.status());
    Result<std::optional<std::int64_t>> experiment = db->FindExperiment(spec.name);
    if (!experiment.ok()) return ReportError("sweep", experiment.status());
    for (std::size_t k = 0; *experiment && k < points.size(); ++k) {
      Result<std::optional<std::int64_t>> run = db->FindFinishedRun(**experiment, points[k].key);
      if (!run.ok()) return ReportError("sweep", run.status());
      done[k] = *run;
    }
  }
  std::cout << DryRunText(spec, o.db, points, done);
  return kExitOk;
}

}  // namespace pipette::cli
