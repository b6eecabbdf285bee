#include "reference.h"

#include <fmt/format.h>

#include <cmath>

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
    const Batch batch = StepBatch(plan, step * sequences, static_cast<int>(sequences));
    std::vector<Cache> caches;
    model.Forward(batch, Tensor(), caches);
    run.losses.push_back(caches.back().loss);
    model.InputGrad(batch, Tensor(), caches);
    model.WeightGrad(batch, caches);
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
