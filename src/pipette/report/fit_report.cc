#include "pipette/report/fit_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace pipette {

namespace {

// The largest |fitted - measured| / measured over the fit's rows.
double WorstRowError(const CostFit& fit) {
  double worst = 0;
  for (const FitResidual& r : fit.residuals) {
    worst = std::max(worst, std::abs(r.fitted - r.measured) / r.measured);
  }
  return worst;
}

std::string RunList(const CostFit& fit) {
  std::string runs;
  for (const std::int64_t id : fit.runs) runs += (runs.empty() ? "" : ",") + std::to_string(id);
  return runs;
}

int Fitted(const CostFit& fit) {
  return static_cast<int>(std::count(fit.status.begin(), fit.status.end(), FitStatus::kFitted));
}

int Used(const CostFit& fit) {
  return kCostParameters -
         static_cast<int>(std::count(fit.status.begin(), fit.status.end(), FitStatus::kUnused));
}

}  // namespace

nlohmann::ordered_json FitJson(const CostFit& fit) {
  nlohmann::ordered_json json;
  json["id"] = fit.id;
  json["created_at"] = fit.created_at;
  json["runs"] = fit.runs;
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(StoredFitOf(fit).document);
  for (const auto& [key, value] : doc.items()) json[key] = value;
  return json;
}

void PrintFit(const CostFit& fit) {
  fmt::print(
      "# fit {} ({}) of runs {}: engine {}, dtype {}, {}-style decoders; {} of {} "
      "parameters fitted from {} rows\n",
      fit.id, fit.created_at, RunList(fit), fit.family.engine, fit.family.dtype, fit.family.style,
      Fitted(fit), Used(fit), fit.residuals.size());
  if (fit.gemm_table.empty()) {
    fmt::print(
        "# GEMMs priced by their FLOPs and operand elements (no calibration's GEMM table)\n");
  } else {
    fmt::print("# GEMMs priced by calibration {}'s GEMM table ({} shapes) times gemm_table\n",
               fit.calibration, fit.gemm_table.timings().size());
  }
  fmt::print("# {:<17} {:>12} {:<14} {:<14} {:>12}  {}\n", "parameter", "value", "unit", "status",
             "independence", "moves with");
  for (int k = 0; k < kCostParameters; ++k) {
    std::string with;
    for (const int j : fit.with[k])
      with += (with.empty() ? "" : ", ") + std::string(CostParameterName(j));
    fmt::print("  {:<17} {:>12.4g} {:<14} {:<14} {:>12.3g}  {}\n", CostParameterName(k),
               fit.values[k], CostParameterUnit(k), FitStatusName(fit.status[k]),
               fit.independence[k], with.empty() ? "-" : with);
  }
  fmt::print(
      "# instruction gap {:.3g} us, message latency {:.3g} us (medians over the runs; -1: none)\n",
      fit.instruction_gap < 0 ? -1 : fit.instruction_gap * 1e6,
      fit.message_latency < 0 ? -1 : fit.message_latency * 1e6);
  if (fit.step_slowdown.empty()) {
    fmt::print("# step slowdowns: none recorded (a steady machine)\n");
  } else {
    double low = fit.step_slowdown.front().front(), high = low;
    for (const std::vector<double>& step : fit.step_slowdown) {
      for (const double f : step) {
        low = std::min(low, f);
        high = std::max(high, f);
      }
    }
    fmt::print(
        "# step slowdowns: {} steps x {} ranks, {:.3f}-{:.3f} (a rank's computes in a step over "
        "their costs; predictions take the steps in turn)\n",
        fit.step_slowdown.size(), fit.step_slowdown.front().size(), low, high);
    if (StepDrift(fit) > kSteadyDrift) fmt::print("# warning: {}\n", DriftWarning(fit));
  }
  fmt::print("# {:>5} {:<9} {:>5} {:>12} {:>12} {:>8}\n", "run", "kind", "index", "measured_ms",
             "fitted_ms", "error");
  for (const FitResidual& r : fit.residuals) {
    fmt::print("  {:>5} {:<9} {:>5} {:>12.4f} {:>12.4f} {:>+7.2f}%\n", r.run, r.kind, r.index,
               r.measured * 1e3, r.fitted * 1e3, 100 * (r.fitted - r.measured) / r.measured);
  }
  fmt::print("# worst row error {:.2f}%\n", 100 * WorstRowError(fit));
}

std::string DriftWarning(const CostFit& fit) {
  return fmt::format(
      "the fitted runs' steps ran up to {:.1f}% off their median speed (beyond {:.0f}%): the "
      "machine's speed changed while they were measured, and every prediction of this fit takes "
      "those steps in turn; measure the run again on a quiet machine, or fit several runs",
      100 * StepDrift(fit), 100 * kSteadyDrift);
}

void PrintFitList(const std::vector<CostFit>& fits) {
  if (fits.empty()) {
    fmt::print("# no fits\n");
    return;
  }
  fmt::print("# {:>4} {:<20} {:<6} {:<5} {:<6} {:>6} {:>6} {:>8}  {}\n", "id", "created", "engine",
             "dtype", "style", "fitted", "rows", "worst", "runs");
  for (const CostFit& f : fits) {
    fmt::print("  {:>4} {:<20} {:<6} {:<5} {:<6} {:>6} {:>6} {:>7.2f}%  {}\n", f.id, f.created_at,
               f.family.engine, f.family.dtype, f.family.style, Fitted(f), f.residuals.size(),
               100 * WorstRowError(f), RunList(f));
  }
}

}  // namespace pipette
