// Small checks shared by the schedule generators. Each returns InvalidArgument with a message that
// names the key, the value and the rule, or OK.
#pragma once

#include <fmt/core.h>

#include <string_view>

#include "pipette/common/status.h"
#include "pipette/schedule/schedule.h"

namespace pipette::schedules {

// v must equal `required` (`why` says what the stages per rank are, e.g. "two parameter copies").
inline Status RequireV(const ScheduleParams& params, int required, std::string_view why) {
  if (params.v == required) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "v = {}: this schedule has exactly {} stage(s) per rank ({})", params.v, required, why));
}

// m must be at least `minimum`; `rule` spells the bound, e.g. "2p = 8".
inline Status RequireMAtLeast(const ScheduleParams& params, int minimum, std::string_view rule,
                              std::string_view source) {
  if (params.m >= minimum) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("m = {}: this schedule needs m >= {} ({})", params.m, rule, source));
}

}  // namespace pipette::schedules
