// Small checks shared by the schedule generators. Each returns InvalidArgument with a message that
// names the key, the value and the rule, or OK.
#pragma once

#include <fmt/core.h>

#include <string_view>

#include "pipette/common/status.h"
#include "pipette/schedule/schedule.h"
#include "pipette/schedule/schedule_generator.h"

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

// The constraints of a V-layout schedule that takes any p and m (zbv, v-half, v-min): exactly two
// stages per rank, r and 2p-1-r. Its generators fill name, summary and Generate.
class VLayoutGenerator : public ScheduleGenerator {
 public:
  std::string_view constraints() const override { return "v = 2"; }
  int default_v() const override { return 2; }
  Status Check(const ScheduleParams& params) const override {
    return RequireV(params, 2, "V layout: stages r and 2p-1-r");
  }
};

}  // namespace pipette::schedules
