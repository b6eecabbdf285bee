#include "reference.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "pipette/engine/corpus.h"

namespace pipette::cpu {

NamedTensors Snapshot(const ParamSet& params, bool grads) {
  NamedTensors out;
  for (const auto& [name, e] : params.entries()) {
    const Tensor& t = grads ? e.copies.front()->grad : e.copies.front()->value;
    out[name].assign(t.data(), t.data() + t.size());
  }
  return out;
}

namespace {

// The sequences of step `step`, one batch per distinct sequence length: every replica's
// microbatches of that length, in (replica, microbatch) order. With one length that is the step's
// sequences `step * sequences ...` in corpus order, one batch.
std::map<int, Batch> StepBatchesByLength(const TrainPlan& plan, int step, std::int64_t sequences) {
  std::map<int, Batch> batches;
  if (!plan.variable_seqlens()) {
    batches[plan.seq_len] = StepBatch(plan, step * sequences, static_cast<int>(sequences));
    return batches;
  }
  for (int replica = 0; replica < plan.dp; ++replica) {
    for (int mb = 0; mb < plan.m(); ++mb) {
      Batch part = MicrobatchOf(plan, step, replica, mb);
      auto [it, fresh] = batches.try_emplace(part.seq, part);
      if (fresh) continue;
      Batch& batch = it->second;
      batch.sequences += part.sequences;
      batch.tokens.insert(batch.tokens.end(), part.tokens.begin(), part.tokens.end());
      batch.targets.insert(batch.targets.end(), part.targets.begin(), part.targets.end());
    }
  }
  return batches;
}

}  // namespace

ReferenceRun TrainReference(const TrainPlan& plan, const TrainOptions& options) {
  ModuleChain model;
  for (const std::string& layer : LayerNames(plan.spec)) {
    model.Add(std::move(MakeModule(plan.spec, layer, options.seed).value()));
  }
  ParamSet params;
  params.Add(model);
  params.AllocateOptimizerState();
  const AdamWConfig adam{.lr = options.lr, .weight_decay = options.weight_decay};
  const std::int64_t sequences = plan.sequences_per_step();

  ReferenceRun run;
  for (int step = 0; step < options.steps; ++step) {
    double loss = 0;
    for (const auto& [seq, batch] : StepBatchesByLength(plan, step, sequences)) {
      std::vector<Cache> caches;
      model.Forward(batch, Tensor(), caches);
      // The batch's mean loss, weighted by its share of the step's tokens (exactly 1 for one).
      loss += caches.back().loss * (static_cast<double>(batch.num_tokens()) /
                                    static_cast<double>(plan.tokens_per_step()));
      model.InputGrad(batch, Tensor(), caches);
      model.WeightGrad(batch, caches);  // accumulates over the batches
    }
    run.losses.push_back(loss);
    params.SumLocalCopies();
    if (step == 0) run.first_grads = Snapshot(params, true);
    params.Step(adam, step + 1);
  }
  run.final_params = Snapshot(params, false);
  return run;
}

Result<Mismatch> Compare(const NamedTensors& actual, const NamedTensors& expected) {
  Mismatch result;
  double total_diff = 0, total_norm = 0;
  for (const auto& [name, want] : expected) {
    const auto it = actual.find(name);
    if (it == actual.end()) {
      return Status::FailedPrecondition(fmt::format("tensor '{}' is missing", name));
    }
    const std::vector<float>& got = it->second;
    if (got.size() != want.size()) {
      return Status::FailedPrecondition(
          fmt::format("tensor '{}' has {} elements, expected {}", name, got.size(), want.size()));
    }
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
      norm += static_cast<double>(want[i]) * want[i];
    }
    const double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    total_diff += diff;
    total_norm += norm;
    if (rel > result.max_relative_error || result.worst.empty()) {
      result.max_relative_error = std::max(rel, result.max_relative_error);
      result.worst = name;
    }
  }
  result.global_relative_error =
      total_norm > 0 ? std::sqrt(total_diff / total_norm) : std::sqrt(total_diff);
  if (actual.size() != expected.size()) {
    for (const auto& [name, values] : actual) {
      if (!expected.contains(name)) {
        return Status::FailedPrecondition(fmt::format("unexpected tensor '{}'", name));
      }
    }
  }
  return result;
}

Result<Verification> VerifyAgainstReference(const TrainPlan& plan, const TrainOptions& options,
                                            const NamedTensors& first_grads,
                                            const NamedTensors& final_params,
                                            const std::vector<double>& losses) {
  const ReferenceRun reference = TrainReference(plan, options);
  Verification v;
  PIPETTE_ASSIGN_OR_RETURN(v.gradients, Compare(first_grads, reference.first_grads));
  PIPETTE_ASSIGN_OR_RETURN(v.parameters, Compare(final_params, reference.final_params));
  for (std::size_t s = 0; s < reference.losses.size() && s < losses.size(); ++s) {
    v.max_loss_difference =
        std::max(v.max_loss_difference, std::abs(losses[s] - reference.losses[s]));
  }
  return v;
}

}  // namespace pipette::cpu
