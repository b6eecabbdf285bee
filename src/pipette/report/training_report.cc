#include "pipette/report/training_report.h"

#include <fmt/core.h>

#include <cmath>
#include <optional>
#include <string>

#include "pipette/common/build_info.h"
#include "pipette/schedule/uneven_work.h"
#include "pipette/store/training_run.h"

namespace pipette {
namespace {

void AddVerification(std::string& out, const Verification& v, double tolerance) {
  out += fmt::format("# verify against the unpipelined reference (tolerance {:g}):\n", tolerance);
  out += fmt::format("#   gradients after step 1: max relative error {:.3g} ({})\n",
                     v.gradients.max_relative_error, v.gradients.worst);
  out += fmt::format(
      "#   parameters at the end:  relative error {:.3g} (largest in one tensor: {:.3g}, {})\n",
      v.parameters.global_relative_error, v.parameters.max_relative_error, v.parameters.worst);
  out += fmt::format("#   loss: max difference {:.3g}\n", v.max_loss_difference);
}

}  // namespace

bool Verified(const TrainReport& r, double tolerance) {
  return !r.verification || r.verification->Passes(tolerance);
}

nlohmann::ordered_json TrainingJson(const TrainingReportSettings& o, const TrainPlan& plan,
                                    const TrainReport& r) {
  nlohmann::ordered_json json;
  json["engine"] = o.engine;
  json["model"] = plan.spec.name;
  json["params"] = r.params;
  json["schedule"] = plan.schedule.name;
  json["p"] = plan.p();
  json["v"] = plan.schedule.v;
  json["m"] = plan.m();
  json["dp"] = plan.dp;
  json["steps"] = o.steps;
  json["tokens_per_step"] = plan.tokens_per_step();
  json["losses"] = r.losses;  // a NaN or infinite loss is null
  if (const std::optional<int> k = FirstNonFiniteLoss(r.losses)) json["loss_nonfinite_from"] = *k;
  json["step_time_s"] = r.step_times;
  json["tokens_per_s"] = r.tokens_per_s;
  json["peak_memory_bytes"] = r.peak_memory_bytes;
  json["peak_rss_bytes"] = r.peak_rss_bytes;
  if (!r.device_compute_seconds.empty()) json["device_compute_s"] = r.device_compute_seconds;
  json["work_s"] = r.compute_work_seconds;
  json["slowdown_s"] = r.slowdown_seconds;
  if (r.verification) {
    auto& v = json["verify"];
    v["grad_rel_err"] = r.verification->gradients.max_relative_error;
    v["grad_worst"] = r.verification->gradients.worst;
    v["param_rel_err"] = r.verification->parameters.global_relative_error;
    v["param_tensor_rel_err"] = r.verification->parameters.max_relative_error;
    v["param_worst"] = r.verification->parameters.worst;
    v["loss_diff"] = r.verification->max_loss_difference;
    v["tolerance"] = o.tolerance;
    v["ok"] = Verified(r, o.tolerance);
  }
  json["status"] = Verified(r, o.tolerance) ? "ok" : "failed";
  return json;
}

std::string TrainingHeader(const TrainingReportSettings& o, const TrainPlan& plan) {
  std::string out = fmt::format(
      "# pipette {} train --engine {}{}: model {} ({} layers, width {}), {} p={} v={} m={} "
      "dp={}, {} x {} tokens per microbatch\n",
      Version(), o.engine, o.virtual_ranks ? " --virtual-ranks" : "", plan.spec.name,
      plan.spec.layers, plan.spec.hidden, plan.schedule.name, plan.p(), plan.schedule.v, plan.m(),
      plan.dp, plan.micro_batch_size, plan.seq_len);
  if (plan.uneven_speed()) {
    out += fmt::format("# --rank-speed {}\n", FormatRankSpeeds(plan.rank_speed));
  }
  if (plan.variable_seqlens()) {
    out += fmt::format("# --microbatch-seqlens {} ({} tokens per step)\n",
                       FormatMicrobatchSeqlens(plan.microbatch_seqlens), plan.tokens_per_step());
  }
  out += "#  step      loss   time [ms]   tokens/s\n";
  return out;
}

std::string TrainingStepLine(const TrainPlan& plan, int step, double loss, double seconds) {
  const double step_tokens = static_cast<double>(plan.tokens_per_step());
  // A loss that is not finite reads "nan", "inf" or "-inf" in the loss column.
  const std::string loss_text = std::isfinite(loss)
                                    ? fmt::format("{:.4f}", loss)
                                    : (std::isnan(loss) ? "nan" : (loss > 0 ? "inf" : "-inf"));
  return fmt::format("{:7d} {:>9} {:11.2f} {:10.0f}\n", step + 1, loss_text, seconds * 1e3,
                     step_tokens / seconds);
}

std::string TrainingSummary(const TrainReport& r, double tolerance) {
  std::string out = fmt::format(
      "# mean step {:.2f} ms, {:.0f} tokens/s; peak tensor memory per rank:", MeanStepTime(r) * 1e3,
      r.tokens_per_s);
  for (const double b : r.peak_memory_bytes) out += fmt::format(" {:.2f} MiB", b / (1 << 20));
  out += fmt::format("\n");
  if (const std::optional<int> k = FirstNonFiniteLoss(r.losses)) {
    out += fmt::format("# the loss is not finite from step {} on: the run diverged\n", *k + 1);
  }
  if (r.verification) AddVerification(out, *r.verification, tolerance);
  return out;
}

}  // namespace pipette
