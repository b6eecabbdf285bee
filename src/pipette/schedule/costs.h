// Costs: the duration of each compute action, per stage (chunk), in any consistent time unit.
//
// F, I and W are given per stage; a full backward costs I + W unless its own measured cost is given
// (an engine's fused B is not exactly I + W). The cost model of a real model and cluster fills one
// entry per stage; schedule studies use Uniform(). Plain value type.
//
// Expert-parallel all-to-all (MoE stages, `alltoall`): a plain F runs its compute, then its
// dispatch and combine all-to-all, serially (F + a2a_F); so do I and B with the backward's (I +
// a2a_B); W has none. An overlapped (F;B) cell runs both halves' compute while both halves'
// all-to-alls are in flight, one after the other (DualPipe's overlap): it costs
// max(F + B, a2a_F + a2a_B) of its halves, or F + B + a2a_F + a2a_B with overlap_alltoall false.
// Without all-to-all (a dense model, every schedule study) a cell costs F + B either way.
//
// Uneven work (uneven_work.h): microbatches of different sequence lengths cost different amounts,
// so Costs may hold several per-stage cost sets ("variants") and, per microbatch, the variant it
// costs. Rank speeds are folded into every set per stage (a stage on a rank at speed 0.5 costs
// twice its nominal). Of() is the one place a compute's duration is read; it honours both.
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/schedule/action.h"

namespace pipette {

// The largest accepted cost or latency: far above any real duration, small enough that sums over
// millions of actions stay finite.
inline constexpr double kMaxCost = 1e12;

struct StageCost {
  double f = 1.0;  // forward
  double i = 1.0;  // input-gradient backward
  double w = 1.0;  // weight-gradient backward
  double b() const { return i + w; }
};

// The expert-parallel all-to-all of one stage, seconds on an idle network: a forward's dispatch
// and combine (f), an input-gradient or full backward's (b, their gradients).
struct StageComm {
  double f = 0;
  double b = 0;
};

// One per-stage cost set: what every microbatch of one sequence length costs.
struct StageCostSet {
  std::vector<StageCost> stages;
  std::vector<double> full_backward;  // per stage, or empty: I + W
};

struct Costs {
  // Per stage: the cost of a microbatch at the reference length (every microbatch when
  // microbatch_variant is empty).
  std::vector<StageCost> stages;
  // Per stage, a full backward's own cost (an engine's fused B, measured); empty: I + W.
  std::vector<double> full_backward;
  // Variable-length microbatches: per microbatch (size m), the index in `variants` of the set its
  // computes cost; empty: every microbatch costs `stages` / `full_backward`. Each variant has
  // stages.size() entries (and full_backward empty or of that size).
  std::vector<int> microbatch_variant;
  std::vector<StageCostSet> variants;
  // Per stage, its all-to-all (empty: none anywhere). The same for every microbatch and rank
  // speed (communication, not compute).
  std::vector<StageComm> alltoall;
  // Whether an overlapped cell hides its all-to-all behind its compute (above).
  bool overlap_alltoall = true;

  // Returns the same cost for every one of `num_stages` stages.
  static Costs Uniform(int num_stages, StageCost cost) {
    Costs costs;
    costs.stages.assign(num_stages, cost);
    return costs;
  }

  // Returns the cost of `stage` for `microbatch`. REQUIRES: both in range (Check() passed).
  const StageCost& Stage(int stage, int microbatch) const {
    return microbatch_variant.empty() ? stages[stage]
                                      : variants[microbatch_variant[microbatch]].stages[stage];
  }
  // Returns the cost of a full backward of `stage` for `microbatch`.
  double FullBackward(int stage, int microbatch) const {
    if (microbatch_variant.empty()) {
      return full_backward.empty() ? stages[stage].b() : full_backward[stage];
    }
    const StageCostSet& set = variants[microbatch_variant[microbatch]];
    return set.full_backward.empty() ? set.stages[stage].b() : set.full_backward[stage];
  }

  // Returns the compute part of a compute action's duration (an overlapped cell: both halves').
  // REQUIRES: IsCompute(a.kind), stage and microbatch in range.
  double Compute(const Action& a) const {
    switch (a.kind) {
      case ActionKind::kForward:
        return Stage(a.stage, a.microbatch).f;
      case ActionKind::kInputBackward:
        return Stage(a.stage, a.microbatch).i;
      case ActionKind::kWeightBackward:
        return Stage(a.stage, a.microbatch).w;
      case ActionKind::kFullBackward:
        return FullBackward(a.stage, a.microbatch);
      case ActionKind::kOverlapped:
        return Stage(a.stage, a.microbatch).f + Compute(a.backward_half());
      default:
        return 0.0;
    }
  }

  // Returns the all-to-all part: a2a_F of a forward, a2a_B of an I or B, 0 for W, both halves'
  // sum for an overlapped cell.
  double Comm(const Action& a) const {
    if (alltoall.empty()) return 0.0;
    switch (a.kind) {
      case ActionKind::kForward:
        return alltoall[a.stage].f;
      case ActionKind::kInputBackward:
      case ActionKind::kFullBackward:
        return alltoall[a.stage].b;
      case ActionKind::kOverlapped:
        return alltoall[a.stage].f + Comm(a.backward_half());
      default:
        return 0.0;
    }
  }

  // Returns the duration of a compute action: Compute + Comm, an overlapped cell's with the
  // overlap model max(Compute, Comm). REQUIRES: IsCompute(a.kind), stage and microbatch in range.
  double Of(const Action& a) const {
    const double compute = Compute(a);
    if (alltoall.empty()) return compute;
    const double comm = Comm(a);
    if (a.kind == ActionKind::kOverlapped && overlap_alltoall) return std::max(compute, comm);
    return compute + comm;
  }

  // Returns OK when the costs fit a program of `num_stages` stages and `m` microbatches: one
  // entry per stage in every set, full_backward and alltoall empty or per stage,
  // microbatch_variant empty or one valid index per microbatch, every value finite and
  // non-negative.
  Status Check(int num_stages, int m) const;
};

// Parses "F=1,I=1,W=1" (any subset, any order; missing keys keep `defaults`). Values are finite
// numbers in [0, kMaxCost]; each key at most once. `key` names the option in errors ("--times").
Result<StageCost> ParseStageCost(std::string_view text, std::string_view key,
                                 StageCost defaults = {});

}  // namespace pipette
