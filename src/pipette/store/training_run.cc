#include "pipette/store/training_run.h"

#include <fmt/core.h>

#include <optional>
#include <utility>
#include <vector>

#include "pipette/engine/measured_costs.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/schedule/uneven_work.h"
#include "pipette/store/kernel_metrics.h"
#include "pipette/store/trace_rows.h"

namespace pipette {

void AddStageCostMetrics(const std::vector<MeasuredStageCost>& costs,
                         std::vector<MetricRow>& metrics) {
  const std::pair<ActionKind, const char*> kinds[] = {{ActionKind::kForward, "stage_f_s"},
                                                      {ActionKind::kInputBackward, "stage_i_s"},
                                                      {ActionKind::kWeightBackward, "stage_w_s"},
                                                      {ActionKind::kFullBackward, "stage_b_s"}};
  for (const auto& [kind, name] : kinds) {
    for (std::size_t s = 0; s < costs.size(); ++s) {
      if (const std::optional<double>& seconds = costs[s].Of(kind)) {
        metrics.push_back({fmt::format("{}[{}]", name, s), *seconds, "s"});
      }
    }
  }
}

double MeanStepTime(const TrainReport& r) {
  double mean = 0;
  for (const double t : r.step_times) mean += t / static_cast<double>(r.step_times.size());
  return mean;
}

// The run's rows: every traced instruction, memory over time and the metrics.
RunData TrainingRunData(const TrainPlan& plan, const TrainReport& r, bool virtual_ranks) {
  RunData data;
  data.events = ToEventRows(plan.program, r.trace, r.allreduces, r.updates);
  // A send's buffer is held to the end of the step's program, except between virtual ranks
  // (the receiver's copy frees it).
  data.memory = ToMemoryRows(MemoryOverTime(r.trace, r.static_bytes, r.stage_memory,
                                            /*message_buffers=*/!virtual_ranks));
  data.metrics = {{"step_time_s", MeanStepTime(r), "s"},
                  {"tokens_per_s", r.tokens_per_s, "tokens/s"},
                  {"final_loss", r.losses.back(), "nats"},
                  {"params", static_cast<double>(r.params), "count"}};
  AddPerRank(data.metrics, "loss", r.losses, "nats");  // NaN: SQL NULL
  if (const std::optional<int> k = FirstNonFiniteLoss(r.losses)) {
    data.metrics.push_back({"loss_nonfinite_from", static_cast<double>(*k), "step"});
  }
  AddPerRank(data.metrics, "step_times_s", r.step_times, "s");
  AddPerRank(data.metrics, "peak_memory_bytes", r.peak_memory_bytes, "B");
  AddPerRank(data.metrics, "peak_rss_bytes", r.peak_rss_bytes, "B");
  AddPerRank(data.metrics, "device_compute_s", r.device_compute_seconds, "s");
  if (plan.uneven_speed()) {  // the CPU time of the computes' work and of the busy waits
    AddPerRank(data.metrics, "compute_work_s", r.compute_work_seconds, "s");
    AddPerRank(data.metrics, "slowdown_s", r.slowdown_seconds, "s");
  }
  AddStageCostMetrics(MeasureStageCosts(r.trace, plan.schedule.num_stages()), data.metrics);
  AddKernelMetrics(r.kernels, r.kernel_profile_steps, data.metrics);
  // The bytes the engine holds, so a simulation can model its memory (simulate --costs-from).
  AddPerRank(data.metrics, "static_bytes", r.static_bytes, "B");
  std::vector<double> activation, wgrad_input, workspace;
  for (const StageMemory& m : r.stage_memory) {
    activation.push_back(static_cast<double>(m.activation_bytes));
    wgrad_input.push_back(static_cast<double>(m.wgrad_input_bytes));
    workspace.push_back(static_cast<double>(m.workspace_bytes));
  }
  AddPerRank(data.metrics, "stage_activation_bytes", activation, "B");
  AddPerRank(data.metrics, "stage_wgrad_input_bytes", wgrad_input, "B");
  AddPerRank(data.metrics, "stage_workspace_bytes", workspace, "B");
  if (r.verification) {
    data.metrics.push_back(
        {"verify_grad_rel_err", r.verification->gradients.max_relative_error, "fraction"});
    data.metrics.push_back(
        {"verify_param_rel_err", r.verification->parameters.global_relative_error, "fraction"});
  }
  return data;
}

RunData TrainingStepData(const TrainPlan& plan, int step, const TrainReport& r,
                         bool virtual_ranks) {
  RunData data;
  if (!r.trace.empty()) {
    data.events = ToEventRows(plan.program, r.trace, r.allreduces, r.updates);
    data.memory = ToMemoryRows(MemoryOverTime(r.trace, r.static_bytes, r.stage_memory,
                                              /*message_buffers=*/!virtual_ranks));
  }
  data.metrics = {{fmt::format("loss[{}]", step), r.losses.at(0), "nats"},
                  {fmt::format("step_times_s[{}]", step), r.step_times.at(0), "s"}};
  return data;
}

TrainingConfig TrainingConfigOf(std::string_view engine, const TrainOptions& t,
                                const TrainPlan& plan) {
  TrainingConfig c;
  c.engine = std::string(engine);
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
  if (engine == "cuda") c.virtual_ranks = t.virtual_ranks;
  // Uneven work, in the syntax of --rank-speed and --microbatch-seqlens; only when given.
  if (plan.uneven_speed()) c.rank_speed = FormatRankSpeeds(plan.rank_speed);
  if (plan.variable_seqlens())
    c.microbatch_seqlens = FormatMicrobatchSeqlens(plan.microbatch_seqlens);
  c.pieces = plan.piece_layers;
  c.stage_piece = plan.stage_piece;
  return c;
}

}  // namespace pipette
