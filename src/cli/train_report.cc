#include "cli/train_report.h"

#include <fmt/core.h>

#include <iostream>

#include "cli/exit_code.h"
#include "pipette/common/build_info.h"
#include "pipette/common/printable.h"
#include "pipette/schedule/uneven_work.h"
#include "pipette/store/training_run.h"

namespace pipette::cli {
namespace {

void PrintVerification(const Verification& v, double tolerance) {
  fmt::print("# verify against the unpipelined reference (tolerance {:g}):\n", tolerance);
  fmt::print("#   gradients after step 1: max relative error {:.3g} ({})\n",
             v.gradients.max_relative_error, v.gradients.worst);
  fmt::print(
      "#   parameters at the end:  relative error {:.3g} (largest in one tensor: {:.3g}, {})\n",
      v.parameters.global_relative_error, v.parameters.max_relative_error, v.parameters.worst);
  fmt::print("#   loss: max difference {:.3g}\n", v.max_loss_difference);
}

}  // namespace

TrainingConfig ConfigOf(const TrainCommandOptions& o, const TrainPlan& plan) {
  const TrainOptions& t = o.train;
  TrainingConfig c;
  c.engine = o.engine;
  c.model = t.model;
  // The resolved architecture: the same name could mean different files on different hosts.
  const DecoderSpec& spec = plan.spec;
  c.architecture =
      ArchitectureConfig{spec.layers, spec.hidden,        spec.heads,          spec.ffn_hidden,
                         spec.vocab,  spec.max_positions, spec.tied_embeddings};
  c.schedule = plan.schedule.name;
  c.p = plan.p();
  c.v = plan.schedule.v;
  c.m = plan.m();
  c.pp = plan.p();
  c.dp = plan.dp;
  c.steps = t.steps;
  c.micro_batch_size = plan.micro_batch_size;
  c.seq_len = plan.seq_len;
  c.seed = t.seed;
  c.lr = t.lr;
  c.weight_decay = t.weight_decay;
  c.verify = t.verify;
  c.trace_steps = t.trace_steps;
  c.dtype = t.dtype;
  if (o.engine == "cuda") c.virtual_ranks = t.virtual_ranks;
  // Uneven work, in the syntax of --rank-speed and --microbatch-seqlens; only when given.
  if (plan.uneven_speed()) c.rank_speed = FormatRankSpeeds(plan.rank_speed);
  if (plan.variable_seqlens())
    c.microbatch_seqlens = FormatMicrobatchSeqlens(plan.microbatch_seqlens);
  c.pieces = plan.piece_layers;
  c.stage_piece = plan.stage_piece;
  return c;
}

bool Verified(const TrainCommandOptions& o, const TrainReport& r) {
  return !r.verification || r.verification->Passes(o.tolerance);
}

// The run's JSON line, without where it was recorded.
nlohmann::ordered_json JsonOf(const TrainCommandOptions& o, const TrainPlan& plan,
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
  json["steps"] = o.train.steps;
  json["tokens_per_step"] = plan.tokens_per_step();
  json["losses"] = r.losses;
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
    v["ok"] = Verified(o, r);
  }
  json["status"] = Verified(o, r) ? "ok" : "failed";
  return json;
}

void PrintHeader(const TrainCommandOptions& o, const TrainPlan& plan) {
  fmt::print(
      "# pipette {} train --engine {}{}: model {} ({} layers, width {}), {} p={} v={} m={} "
      "dp={}, {} x {} tokens per microbatch\n",
      Version(), o.engine, o.train.virtual_ranks ? " --virtual-ranks" : "", plan.spec.name,
      plan.spec.layers, plan.spec.hidden, plan.schedule.name, plan.p(), plan.schedule.v, plan.m(),
      plan.dp, plan.micro_batch_size, plan.seq_len);
  if (plan.uneven_speed()) {
    fmt::print("# --rank-speed {}\n", FormatRankSpeeds(plan.rank_speed));
  }
  if (plan.variable_seqlens()) {
    fmt::print("# --microbatch-seqlens {} ({} tokens per step)\n",
               FormatMicrobatchSeqlens(plan.microbatch_seqlens), plan.tokens_per_step());
  }
  fmt::print("#  step      loss   time [ms]   tokens/s\n");
}

void PrintStep(const TrainPlan& plan, int step, double loss, double seconds) {
  const double step_tokens = static_cast<double>(plan.tokens_per_step());
  fmt::print("{:7d} {:9.4f} {:11.2f} {:10.0f}\n", step + 1, loss, seconds * 1e3,
             step_tokens / seconds);
  std::fflush(stdout);
}

void PrintSummary(const TrainCommandOptions& o, const TrainReport& r) {
  fmt::print("# mean step {:.2f} ms, {:.0f} tokens/s; peak tensor memory per rank:",
             MeanStepTime(r) * 1e3, r.tokens_per_s);
  for (const double b : r.peak_memory_bytes) fmt::print(" {:.2f} MiB", b / (1 << 20));
  fmt::print("\n");
  if (r.verification) PrintVerification(*r.verification, o.tolerance);
}

// Rank 0's recording and output after training; returns the exit code.
int Report(const TrainCommandOptions& o, const TrainPlan& plan, const TrainReport& r,
           RunRecorder& recorder) {
  const bool verified = Verified(o, r);
  const Status recorded = recorder.Finish(TrainingRunData(plan, r, o.train.virtual_ranks),
                                          verified ? kRunOk : kRunFailed);
  if (!recorded.ok()) {
    (void)ReportError("train", recorded);
    return kExitFailure;
  }
  if (o.format == "json") {
    nlohmann::ordered_json json = JsonOf(o, plan, r);
    if (recorder.enabled()) {
      json["run_id"] = recorder.run_id();
      json["db"] = recorder.path();
    }
    std::cout << json.dump() << std::endl;
  } else {
    PrintSummary(o, r);
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
