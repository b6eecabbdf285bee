// The unpipelined reference: the same model trained in one process on the same global batches,
// each step one forward and one backward over all of the step's sequences (no microbatches, no
// pipeline, no data parallelism; with variable sequence lengths one forward and backward per
// distinct length, over all sequences of that length, the gradients accumulated). The loss is the
// mean over the step's tokens. A pipelined run of any schedule must match it to rounding.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "param_set.h"
#include "pipette/common/status.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"

namespace pipette::cpu {

// The gradients (`grads = true`) or values of each distinct parameter of `params`.
NamedTensors Snapshot(const ParamSet& params, bool grads);

struct ReferenceRun {
  std::vector<double> losses;  // per step
  NamedTensors first_grads;    // after step 1's backward, before the update
  NamedTensors final_params;   // after the last step
};

// Trains plan.spec for options.steps steps with AdamW(options) from options.seed.
ReferenceRun TrainReference(const TrainPlan& plan, const TrainOptions& options);

// Compares `actual` with `expected` tensor by tensor. Errors: a name in one and not the other, or
// sizes that differ (FailedPrecondition naming it).
Result<Mismatch> Compare(const NamedTensors& actual, const NamedTensors& expected);

// Trains the unpipelined reference (TrainReference) and compares a run with it: `first_grads`
// (after step 1), `final_params` (after the last step) and the per-step `losses`. Any real engine's
// run can be checked this way (the CUDA engine's by `pipette train --engine cuda --verify`).
Result<Verification> VerifyAgainstReference(const TrainPlan& plan, const TrainOptions& options,
                                            const NamedTensors& first_grads,
                                            const NamedTensors& final_params,
                                            const std::vector<double>& losses);

}  // namespace pipette::cpu
