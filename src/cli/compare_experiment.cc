#include "cli/compare_experiment.h"

#include <fmt/core.h>

#include <iostream>
#include <optional>

#include "pipette/common/printable.h"
#include "pipette/fidelity/fidelity_summary.h"
#include "pipette/report/fidelity_report.h"
#include "pipette/store/db_access.h"

namespace pipette::cli {

Status CompareExperiment(const std::string& path, const std::string& experiment,
                         const std::string& format) {
  PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, OpenExistingDb(path));
  PIPETTE_ASSIGN_OR_RETURN(const std::optional<std::int64_t> id, db.FindExperiment(experiment));
  if (!id) {
    return Status::InvalidArgument(fmt::format("--experiment = '{}': no such experiment in '{}'",
                                               Printable(experiment), Printable(path)));
  }
  PIPETTE_ASSIGN_OR_RETURN(const FidelitySummary s, SummarizeFidelity(db, *id));
  if (format == "json") {
    std::cout << FidelityJson(experiment, s).dump() << "\n";
  } else {
    std::cout << FidelityText(experiment, s);
  }
  return Status::Ok();
}

}  // namespace pipette::cli
