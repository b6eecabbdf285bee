#include "pipette/cluster/placement_order.h"

#include <fmt/core.h>

#include "pipette/common/split.h"

namespace pipette {
namespace {

std::string_view AxisName(ParallelAxis axis) {
  switch (axis) {
    case ParallelAxis::kTp:
      return "tp";
    case ParallelAxis::kPp:
      return "pp";
    case ParallelAxis::kDp:
      return "dp";
  }
  return "?";
}

}  // namespace

std::string PlacementOrderName(const PlacementOrder& order) {
  return fmt::format("{},{},{}", AxisName(order.innermost_first[0]),
                     AxisName(order.innermost_first[1]), AxisName(order.innermost_first[2]));
}

Result<PlacementOrder> ParsePlacementOrder(std::string_view text, std::string_view option) {
  const std::vector<std::string> items = SplitAt(std::string(text), ',');
  PlacementOrder order;
  bool seen[3] = {false, false, false};
  bool ok = items.size() == 3;
  for (std::size_t k = 0; ok && k < items.size(); ++k) {
    const ParallelAxis axes[] = {ParallelAxis::kTp, ParallelAxis::kPp, ParallelAxis::kDp};
    ok = false;
    for (int a = 0; a < 3; ++a) {
      if (items[k] == AxisName(axes[a]) && !seen[a]) {
        seen[a] = ok = true;
        order.innermost_first[k] = axes[a];
      }
    }
  }
  if (!ok || order.innermost_first[0] != ParallelAxis::kTp) {
    return Status::InvalidArgument(fmt::format(
        "{} = '{}': must list tp, pp and dp once each, innermost first, with tp first (a "
        "tensor-parallel group stays on consecutive GPUs of one node): tp,pp,dp (replicas "
        "outermost, the default) or tp,dp,pp (data-parallel innermost)",
        option, text));
  }
  return order;
}

}  // namespace pipette
