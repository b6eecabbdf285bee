#include "cli/compare_experiment.h"

#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/store_options.h"
#include "pipette/common/printable.h"
#include "pipette/fidelity/fidelity_summary.h"

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
    nlohmann::ordered_json j;
    j["experiment"] = experiment;
    j["pairs"] = nlohmann::ordered_json::array();
    for (const FidelityPair& p : s.pairs) {
      j["pairs"].push_back({{"predicted_run", p.predicted_run},
                            {"measured_run", p.measured_run},
                            {"schedule", p.schedule},
                            {"model", p.model},
                            {"p", p.p},
                            {"v", p.v},
                            {"m", p.m},
                            {"dp", p.dp},
                            {"cores", p.cores},
                            {"predicted_step_s", p.predicted_step_s},
                            {"measured_step_s", p.measured_step_s},
                            {"step_error_rel", p.step_error_rel},
                            {"instruction_error_median", p.instruction_error_median},
                            {"instruction_error_p90", p.instruction_error_p90}});
    }
    j["step_mape"] = s.step_mape;
    j["step_worst_error_rel"] = s.step_worst_error_rel;
    j["instruction_error_median"] = s.instruction_error_median;
    std::cout << j.dump() << "\n";
    return Status::Ok();
  }
  fmt::print("# pipette compare --experiment {}: {} predictions against their measured runs\n",
             Printable(experiment), s.pairs.size());
  fmt::print(
      "# step time: mean over steps >= 1; instruction error: |relative duration error| of "
      "F, I, W, B\n");
  fmt::print(
      "# pred  meas  schedule                   model            p  v   m dp  pred [ms]  "
      "meas [ms]   error  instr med  instr p90\n");
  for (const FidelityPair& p : s.pairs) {
    fmt::print(
        "{:6} {:5}  {:<26} {:<15} {:2} {:2} {:3} {:2} {:10.3f} {:10.3f} {:+6.1f}% {:9.1f}% "
        "{:9.1f}%\n",
        p.predicted_run, p.measured_run, Printable(p.schedule),
        Printable(std::filesystem::path(p.model).stem().string()), p.p, p.v, p.m, p.dp,
        p.predicted_step_s * 1e3, p.measured_step_s * 1e3, 100 * p.step_error_rel,
        100 * p.instruction_error_median, 100 * p.instruction_error_p90);
  }
  fmt::print(
      "# step-time MAPE {:.2f}% (worst {:+.1f}%); median per-instruction duration error "
      "{:.1f}%\n",
      100 * s.step_mape, 100 * s.step_worst_error_rel, 100 * s.instruction_error_median);
  return Status::Ok();
}

}  // namespace pipette::cli
