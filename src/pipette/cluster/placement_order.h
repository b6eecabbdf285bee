// PlacementOrder: how the ranks of a parallel configuration lie on the cluster's GPUs, as the
// order of the parallel axes from innermost (consecutive GPUs) to outermost. "tp,pp,dp" (the
// default): a tensor-parallel group on consecutive GPUs, then the pipeline ranks of one replica,
// then the replicas; "tp,dp,pp": the data-parallel replicas of a pipeline rank next to each other
// (the gradient all-reduce stays in a node, pipeline sends cross nodes). Tensor parallelism is
// always innermost (its group stays in a node). The order decides which traffic shares which
// links: GpuOf (parallel_config.h) is the one mapping everyone uses. Plain value type.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "pipette/common/status.h"

namespace pipette {

enum class ParallelAxis { kTp, kPp, kDp };

struct PlacementOrder {
  std::array<ParallelAxis, 3> innermost_first = {ParallelAxis::kTp, ParallelAxis::kPp,
                                                 ParallelAxis::kDp};
  friend bool operator==(const PlacementOrder&, const PlacementOrder&) = default;
};

// "tp,pp,dp" or "tp,dp,pp" (the spelling --placement-order takes and run configs record).
std::string PlacementOrderName(const PlacementOrder& order);

// Parses --placement-order. InvalidArgument naming `option`, the value and the rule: a comma list
// of tp, pp and dp, each once, tp first.
Result<PlacementOrder> ParsePlacementOrder(std::string_view text,
                                           std::string_view option = "--placement-order");

}  // namespace pipette
