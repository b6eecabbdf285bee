// lower(): turns a compute-only schedule into a Program with explicit sends and receives.
//
// Actions are placed rank by rank in turns, each only after its inputs (the dependency walk of
// validate()). When an action whose output crosses ranks is placed, its SEND is appended to the
// producer's list and the matching RECV to the consumer's list at that same moment. Every rank's
// list is thus a projection of one global sequence in which each send sits next to its receive,
// which makes the program deadlock-free even under rendezvous semantics. Pure function.
#pragma once

#include "pipette/common/status.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

// Returns the lowered program, or the error of Validate(schedule) if the schedule is invalid.
Result<Program> Lower(const Schedule& schedule);

}  // namespace pipette
