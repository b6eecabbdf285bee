#include "pipette/report/fidelity_report.h"

#include <fmt/core.h>

#include <filesystem>

#include "pipette/common/printable.h"

namespace pipette {

nlohmann::ordered_json FidelityJson(const std::string& experiment, const FidelitySummary& s) {
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
  return j;
}

std::string FidelityText(const std::string& experiment, const FidelitySummary& s) {
  std::string out;
  out +=
      fmt::format("# pipette compare --experiment {}: {} predictions against their measured runs\n",
                  Printable(experiment), s.pairs.size());
  out += fmt::format(
      "# step time: mean over steps >= 1; instruction error: |relative duration error| of "
      "F, I, W, B\n");
  out += fmt::format(
      "# pred  meas  schedule                   model            p  v   m dp  pred [ms]  "
      "meas [ms]   error  instr med  instr p90\n");
  for (const FidelityPair& p : s.pairs) {
    out += fmt::format(
        "{:6} {:5}  {:<26} {:<15} {:2} {:2} {:3} {:2} {:10.3f} {:10.3f} {:+6.1f}% {:9.1f}% "
        "{:9.1f}%\n",
        p.predicted_run, p.measured_run, Printable(p.schedule),
        Printable(std::filesystem::path(p.model).stem().string()), p.p, p.v, p.m, p.dp,
        p.predicted_step_s * 1e3, p.measured_step_s * 1e3, 100 * p.step_error_rel,
        100 * p.instruction_error_median, 100 * p.instruction_error_p90);
  }
  out += fmt::format(
      "# step-time MAPE {:.2f}% (worst {:+.1f}%); median per-instruction duration error "
      "{:.1f}%\n",
      100 * s.step_mape, 100 * s.step_worst_error_rel, 100 * s.instruction_error_median);
  return out;
}

}  // namespace pipette
