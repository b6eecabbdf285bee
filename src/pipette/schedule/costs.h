// Costs: the duration of each compute action, per stage (chunk), in any consistent time unit.
//
// F, I and W are given per stage; a full backward costs I + W unless its own measured cost is given
// (an engine's fused B is not exactly I + W), and an overlapped (F;B) cell costs F + B of its two
// halves (no overlap benefit is modelled here). The cost model of a real model
// and cluster fills one entry per stage; schedule studies use Uniform(). Plain value type.
#pragma once

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

struct Costs {
  std::vector<StageCost> stages;
  // Per stage, a full backward's own cost (an engine's fused B, measured); empty: I + W.
  std::vector<double> full_backward;

  // Returns the same cost for every one of `num_stages` stages.
  static Costs Uniform(int num_stages, StageCost cost) {
    Costs costs;
    costs.stages.assign(num_stages, cost);
    return costs;
  }

  // Returns the duration of a compute action. REQUIRES: IsCompute(a.kind), stage in range.
  double Of(const Action& a) const {
    const StageCost& c = stages[a.stage];
    switch (a.kind) {
      case ActionKind::kForward:
        return c.f;
      case ActionKind::kInputBackward:
        return c.i;
      case ActionKind::kWeightBackward:
        return c.w;
      case ActionKind::kFullBackward:
        return full_backward.empty() ? c.b() : full_backward[a.stage];
      case ActionKind::kOverlapped:
        return c.f + Of(a.backward_half());
      default:
        return 0.0;
    }
  }
};

// Parses "F=1,I=1,W=1" (any subset, any order; missing keys keep `defaults`). Values are finite
// numbers in [0, kMaxCost]; each key at most once. `key` names the option in errors ("--times").
Result<StageCost> ParseStageCost(std::string_view text, std::string_view key,
                                 StageCost defaults = {});

}  // namespace pipette
