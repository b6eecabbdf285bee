// The bound on every duration pipette derives from its inputs: a stage's forward or backward time,
// a message's transfer time, an all-reduce. Inputs that are each valid on their own (an efficiency
// of 1e-320 lies in (0, 1]) can multiply into an infinite or absurd time; such a time is the
// user's error, refused where it is computed and before anything runs or is recorded, never
// handed to the simulator (SimGrid ends an infinite action in "deadlock detected") or to a plot.
// Header-only; no state.
#pragma once

#include <fmt/core.h>

#include <string>
#include <string_view>

#include "pipette/common/status.h"

namespace pipette {

// The longest single duration accepted, in seconds (about 11.6 days): far above any real layer,
// message or collective, small enough that sums over millions of them stay finite.
inline constexpr double kMaxDurationSeconds = 1e6;

// Returns OK when `seconds` is a number in [0, kMaxDurationSeconds], else InvalidArgument
// "<cause>: <what> would take <seconds> s; a single duration must lie in [0, 1e+06] s".
// `cause` names the input(s) that set the duration ("--efficiency = 1e-320 (...)"), `what` the
// duration ("stage 0 forward").
inline Status CheckDuration(double seconds, std::string_view cause, std::string_view what) {
  if (seconds >= 0 && seconds <= kMaxDurationSeconds) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("{}: {} would take {:.3g} s; a single duration must lie in [0, {:g}] s (about "
                  "11.6 days)",
                  cause, what, seconds, kMaxDurationSeconds));
}

}  // namespace pipette
