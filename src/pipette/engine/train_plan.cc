#include "pipette/engine/train_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "pipette/common/printable.h"
#include "pipette/cost/cost_model.h"
#include "pipette/engine/corpus.h"
#include "pipette/engine/decoder_from_graph.h"
#include "pipette/model/layer_formulas.h"
#include "pipette/model/model_presets.h"
#include "pipette/model/model_toml.h"
#include "pipette/partition/partitioner.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/uneven_work.h"

namespace pipette {
namespace {

// Layer times proportional to FLOPs (one CPU core at 100 GFLOP/s): the balanced partitioner then
// evens out the work per stage.
class FlopCostModel final : public CostModel {
 public:
  LayerTimes Times(const Layer& layer) const override {
    constexpr double kRate = 1e11;
    return {layer.fwd_flops / kRate, layer.igrad_flops / kRate, layer.wgrad_flops / kRate};
  }
};

Status CheckCount(std::string_view key, int value, int low, int high) {
  if (value < low || value > high) {
    return Status::InvalidArgument(
        fmt::format("{} {}: must be in [{}, {}]", key, value, low, high));
  }
  return Status::Ok();
}

// The options that do not depend on the model or the schedule.
Status CheckOptions(const TrainOptions& o) {
  PIPETTE_RETURN_IF_ERROR(CheckCount("--dp", o.dp, 1, 4096));
  PIPETTE_RETURN_IF_ERROR(CheckCount("--steps", o.steps, 1, 10'000'000));
  PIPETTE_RETURN_IF_ERROR(CheckCount("--micro-batch-size", o.micro_batch_size, 1, 1 << 16));
  PIPETTE_RETURN_IF_ERROR(CheckCount("--trace-steps", o.trace_steps, 0, 1'000'000));
  if (!(o.lr > 0 && o.lr < 10)) {
    return Status::InvalidArgument(fmt::format("--lr {}: must be in (0, 10)", o.lr));
  }
  if (!(o.weight_decay >= 0 && o.weight_decay < 1)) {
    return Status::InvalidArgument(
        fmt::format("--weight-decay {}: must be in [0, 1)", o.weight_decay));
  }
  PIPETTE_RETURN_IF_ERROR(CheckPeerTimeout(o.peer_timeout_s));
  return Status::Ok();
}

// Sets plan.stage_piece from the schedule's routes and returns the number of pieces: every route
// must be as long as the first; stage s of route R runs piece s - R.first.
Result<int> AssignPieces(const std::string& schedule_name, TrainPlan& plan) {
  const std::vector<StageRange>& routes = plan.schedule.routes;
  const int pieces = routes.front().last - routes.front().first + 1;
  plan.stage_piece.assign(plan.schedule.num_stages(), -1);
  for (std::size_t mb = 0; mb < routes.size(); ++mb) {
    const StageRange& route = routes[mb];
    if (route.last - route.first + 1 != pieces) {
      return Status::InvalidArgument(fmt::format(
          "--schedule {}: microbatch {} passes {} stages and microbatch 0 passes {}; the real "
          "engines need every route to run the whole model",
          schedule_name, mb, route.last - route.first + 1, pieces));
    }
    for (int s = route.first; s <= route.last; ++s) {
      int& piece = plan.stage_piece[s];
      if (piece != -1 && piece != s - route.first) {
        return Status::InvalidArgument(
            fmt::format("--schedule {}: stage {} is model piece {} on one route and {} on another",
                        schedule_name, s, piece, s - route.first));
      }
      piece = s - route.first;
    }
  }
  return pieces;
}

// Cuts the model into `pieces` runs of layers balanced by FLOPs (plan.piece_layers) and sets the
// width of each stage's output, which must fit one MPI message.
Status CutModel(int pieces, TrainPlan& plan) {
  PIPETTE_ASSIGN_OR_RETURN(
      ModelGraph graph,
      BuildDecoder(plan.spec, Workload{plan.micro_batch_size, plan.seq_len, DType::kFP32}));
  const Placement placement =
      pieces == plan.schedule.num_stages() ? plan.schedule.placement : Placement::Loop(pieces, 1);
  const FlopCostModel cost;
  PartitionRequest request;
  request.strategy = PartitionStrategy::kBalanced;
  PIPETTE_ASSIGN_OR_RETURN(StagePlan cut, Partition(graph, placement, cost, request));
  for (const StageInfo& stage : cut.stages) {
    std::vector<std::string>& names = plan.piece_layers.emplace_back();
    for (const LayerId id : stage.layers) names.push_back(graph.layer(id).name);
    plan.piece_params.push_back(stage.params);
    plan.piece_activation_bytes.push_back(stage.activation_bytes);
    plan.piece_wgrad_input_bytes.push_back(stage.wgrad_input_bytes);
  }
  for (int s = 0; s < plan.schedule.num_stages(); ++s) {
    const std::string& last = plan.piece_layers[plan.stage_piece[s]].back();
    plan.stage_output_cols.push_back(last == "loss"   ? 1
                                     : last == "head" ? plan.spec.vocab
                                                      : plan.spec.hidden);
    // A message is one MPI call with an int count.
    const std::int64_t elements =
        static_cast<std::int64_t>(plan.tokens_per_microbatch()) * plan.stage_output_cols.back();
    if (elements > std::numeric_limits<int>::max()) {
      return Status::InvalidArgument(fmt::format(
          "--micro-batch-size {} --seq-len {}: stage {}'s output is {} elements, more than one "
          "MPI message carries (2^31 - 1)",
          plan.micro_batch_size, plan.seq_len, s, elements));
    }
  }
  return Status::Ok();
}

// The sequence length: --seq-len, else the model's context (max_positions). A learned position
// table bounds it; a RoPE model's context (max_positions, 0 when it gives none) is its default and
// bound too, and without one --seq-len must be given (up to the model layer's kMaxSeqLen).
Result<int> ResolveSeqLen(const DecoderSpec& spec, int seq_len) {
  if (spec.max_positions == 0) {  // RoPE without a context length: a model file, llama2-7b, ...
    if (seq_len == 0) {
      return Status::InvalidArgument(
          fmt::format("--seq-len: model '{}' uses rotary positions and gives no context length "
                      "(max_positions); pass --seq-len",
                      spec.name));
    }
    PIPETTE_RETURN_IF_ERROR(CheckCount("--seq-len", seq_len, 1, static_cast<int>(kMaxSeqLen)));
    return seq_len;
  }
  const int resolved = seq_len == 0 ? spec.max_positions : seq_len;
  PIPETTE_RETURN_IF_ERROR(
      CheckCount("--seq-len", resolved, 1, spec.max_positions)
          .WithContext(fmt::format("model '{}' has {} positions", spec.name, spec.max_positions)));
  return resolved;
}

// Reads --rank-speed and --microbatch-seqlens (schedule/uneven_work.h) for the plan's p and m:
// every rank's speed, at most 1 (a real engine slows a rank by a busy wait; it cannot speed one
// up), and every microbatch's sequence length, which must not exceed seq_len (the model's
// positions and the buffers are sized for it).
Status PlanUnevenWork(const TrainOptions& o, TrainPlan& plan) {
  PIPETTE_ASSIGN_OR_RETURN(plan.rank_speed, ParseRankSpeeds(o.rank_speed, plan.p()));
  if (plan.rank_speed.empty()) plan.rank_speed.assign(plan.p(), 1.0);
  for (int r = 0; r < plan.p(); ++r) {
    if (plan.rank_speed[r] > 1.0) {
      return Status::InvalidArgument(
          fmt::format("--rank-speed {}: rank {} at speed {:g}: a real engine can only slow a "
                      "rank down (speed in (0, 1])",
                      Printable(o.rank_speed), r, plan.rank_speed[r]));
    }
  }
  PIPETTE_ASSIGN_OR_RETURN(plan.microbatch_seqlens,
                           ParseMicrobatchSeqlens(o.microbatch_seqlens, plan.m()));
  if (plan.microbatch_seqlens.empty()) plan.microbatch_seqlens.assign(plan.m(), plan.seq_len);
  for (int mb = 0; mb < plan.m(); ++mb) {
    const int s = plan.microbatch_seqlens[mb];
    if (s < 1 || s > plan.seq_len) {
      return Status::InvalidArgument(fmt::format(
          "--microbatch-seqlens: microbatch {} has length {}: must be in [1, {}] (--seq-len, the "
          "longest sequence the run is planned for)",
          mb, s, plan.seq_len));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckTrainable(const DecoderSpec& spec) {
  PIPETTE_RETURN_IF_ERROR(ValidateDecoderSpec(spec));
  const bool gpt = spec.learned_positions && spec.bias && !spec.gated_mlp;
  const bool llama = !spec.learned_positions && !spec.bias && spec.gated_mlp;
  if (!gpt && !llama) {
    return Status::InvalidArgument(fmt::format(
        "--model {}: the real engines (cpu, cuda) train GPT-style decoders (learned positions, "
        "LayerNorm with biases, GELU MLP) and Llama-style ones (rotary positions (RoPE), RMSNorm "
        "without biases, SwiGLU MLP); this model mixes them: {}, {}, {} MLP",
        spec.name, spec.learned_positions ? "learned positions" : "rotary positions (RoPE)",
        spec.bias ? "LayerNorm with biases" : "RMSNorm without biases",
        spec.gated_mlp ? "gated (SwiGLU)" : "GELU"));
  }
  if (gpt && spec.kv_heads != spec.heads) {
    return Status::InvalidArgument(
        fmt::format("--model {}: kv_heads {}, heads {}: the real engines' GPT-style decoder has "
                    "one KV head per query head (grouped-query attention is Llama-style)",
                    spec.name, spec.kv_heads, spec.heads));
  }
  if (llama && (spec.hidden / spec.heads) % 2 != 0) {
    return Status::InvalidArgument(
        fmt::format("--model {}: head width hidden/heads = {}: RoPE rotates pairs of a head's "
                    "columns, so it must be even",
                    spec.name, spec.hidden / spec.heads));
  }
  if (spec.vocab < 3) {  // the training language needs three successors per token
    return Status::InvalidArgument(
        fmt::format("--model {}: vocab {}: the real engines' training corpus needs vocab >= 3",
                    spec.name, spec.vocab));
  }
  return Status::Ok();
}

std::int64_t TrainPlan::tokens_per_step() const {
  std::int64_t tokens = 0;
  for (int mb = 0; mb < m(); ++mb) tokens += tokens_of(mb);
  return tokens * dp;
}

bool TrainPlan::variable_seqlens() const {
  return std::any_of(microbatch_seqlens.begin(), microbatch_seqlens.end(),
                     [&](int s) { return s != seq_len; });
}

bool TrainPlan::uneven_speed() const {
  return std::any_of(rank_speed.begin(), rank_speed.end(), [](double s) { return s != 1.0; });
}

double TrainPlan::loss_weight(int mb) const {
  return static_cast<double>(seq_len_of(mb)) / seq_len;
}

double TrainPlan::loss_weight_per_step() const {
  double sum = 0;
  for (int mb = 0; mb < m(); ++mb) sum += loss_weight(mb);
  return sum * dp;
}

Batch StepBatch(const TrainPlan& plan, std::int64_t first, int sequences, int seq) {
  const double step_tokens = static_cast<double>(plan.tokens_per_step());
  return MakeBatch(plan.spec.vocab, first, sequences, seq == 0 ? plan.seq_len : seq,
                   static_cast<float>(1.0 / step_tokens));
}

Batch MicrobatchOf(const TrainPlan& plan, int step, int replica, int microbatch) {
  const std::int64_t first =
      (static_cast<std::int64_t>(step) * plan.dp + replica) * plan.m() * plan.micro_batch_size +
      static_cast<std::int64_t>(microbatch) * plan.micro_batch_size;
  return StepBatch(plan, first, plan.micro_batch_size, plan.seq_len_of(microbatch));
}

Status CheckPeerTimeout(double seconds) {
  if (seconds >= 0.1 && seconds <= 1e6) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("--peer-timeout {}: must be in [0.1, 1e6] seconds", seconds));
}

Result<DecoderSpec> ResolveTrainModel(const std::string& model) {
  if (model.ends_with(".toml")) {
    // The model layer reads and validates the file; the decoder is read off its graph. The
    // workload only scales the graph's amounts, which the decoder does not use.
    PIPETTE_ASSIGN_OR_RETURN(const ModelGraph graph,
                             LoadModelToml(model, Workload{1, 1, DType::kFP32}));
    return DecoderFromGraph(graph, model);
  }
  const DecoderSpec* preset = FindDecoderPreset(model);
  if (preset == nullptr) {
    return Status::NotFound(fmt::format(
        "--model {}: no such decoder preset; 'pipette models' lists them (the real engines train "
        "'tiny', 'tiny-llama' and the other GPT- and Llama-style ones)",
        model));
  }
  PIPETTE_RETURN_IF_ERROR(CheckTrainable(*preset));
  return *preset;
}

Result<TrainPlan> PlanTraining(const TrainOptions& o) {
  PIPETTE_RETURN_IF_ERROR(CheckOptions(o));
  TrainPlan plan;
  PIPETTE_ASSIGN_OR_RETURN(plan.spec, ResolveTrainModel(o.model));
  plan.micro_batch_size = o.micro_batch_size;
  PIPETTE_ASSIGN_OR_RETURN(plan.seq_len, ResolveSeqLen(plan.spec, o.seq_len));
  plan.dp = o.dp;
  PIPETTE_ASSIGN_OR_RETURN(plan.schedule, MakeSchedule(o.schedule, {.p = o.p, .v = o.v, .m = o.m}));
  PIPETTE_ASSIGN_OR_RETURN(plan.program, Lower(plan.schedule));
  PIPETTE_ASSIGN_OR_RETURN(const int pieces, AssignPieces(o.schedule, plan));
  PIPETTE_RETURN_IF_ERROR(CutModel(pieces, plan));
  PIPETTE_RETURN_IF_ERROR(PlanUnevenWork(o, plan));
  return plan;
}

}  // namespace pipette
