// validate(): is a compute-only schedule complete, well-ordered and free of deadlock?
//
// A valid schedule has, for every microbatch and every stage of its route, exactly one F and either
// one B or one I and one W, each on the rank that holds the stage; on that rank the F comes before
// the I/B and the I before the W; and the ranks, each running its list strictly in order, can all
// finish when every action waits for its inputs (F(s,i) for F(s-1,i); I/B(s,i) for F(s,i) and
// I/B(s+1,i); W(s,i) for I(s,i); an overlapped cell for both halves' inputs).
#pragma once

#include "pipette/common/status.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

// Returns OK, or FailedPrecondition whose message names the rank, the action (with its position in
// the rank's list) and the reason: a misplaced, duplicated, missing or out-of-order action, or the
// ranks caught in a deadlock and what each one waits for.
Status Validate(const Schedule& schedule);

}  // namespace pipette
