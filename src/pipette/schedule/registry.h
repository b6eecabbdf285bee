// The schedule registry: every built-in generator by CLI name, and the one entry point that turns a
// name (or "csv:FILE") plus parameters into a checked Schedule.
#pragma once

#include <span>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/schedule.h"
#include "pipette/schedule/schedule_generator.h"

namespace pipette {

// Returns every built-in generator, in the order `schedule --list` prints them.
std::span<const ScheduleGenerator* const> AllScheduleGenerators();

// Returns the generator called `name`, or nullptr.
const ScheduleGenerator* FindScheduleGenerator(std::string_view name);

// Builds the schedule `name` for `params`. `name` is a built-in name or "csv:FILE" (p, v and m then
// come from the file; a non-zero params.p/v/m must agree with it). v = 0 selects the schedule's
// default and group_size = 0 its default. A schedule from CSV has passed Validate(); a built-in
// one is valid by construction (tests check every generator over a grid of p, v and m), and
// Lower() validates again before anything executes.
// Errors: NotFound for an unknown name or missing file; InvalidArgument naming the key, value and
// rule for a bad parameter or a violated constraint; FailedPrecondition for an invalid custom
// schedule (missing action, deadlock, ...).
Result<Schedule> MakeSchedule(std::string_view name, const ScheduleParams& params);

// Builds, lowers and evaluates the schedule `name` for `params` with the same per-chunk `cost`
// on every stage: MakeSchedule, Lower, then Evaluate with `options`. Errors: theirs.
Result<Evaluation> EvaluateNamedSchedule(std::string_view name, const ScheduleParams& params,
                                         StageCost cost, const EvaluateOptions& options = {});

}  // namespace pipette
