// A ring all-reduce simulated message by message: the reference the analytic model
// (RingAllReduceSeconds in pipette/cost/collectives.h) is checked against. O(n^2) messages, so
// for validation at small scale; the engine uses the analytic time at large scale.
#pragma once

#include <vector>

#include "pipette/common/status.h"

namespace simgrid::s4u {
class Host;
}

namespace pipette {

// Creates one actor per host of `ring` (in ring order) that together all-reduce `bytes`:
// 2(n-1) steps, each sending bytes/n to the next host and receiving from the previous one.
// After the engine runs, *finish holds the time the last actor finished. Returns InvalidArgument,
// creating nothing, for an empty ring or `bytes` that is not a number in [0, kMaxRingBytes] (a
// chunk must be a byte count). REQUIRES: a running engine's platform contains the hosts; `finish`
// outlives the run.
inline constexpr double kMaxRingBytes = 1e15;
Status LaunchRingAllReduce(const std::vector<simgrid::s4u::Host*>& ring, double bytes,
                           double* finish);

}  // namespace pipette
