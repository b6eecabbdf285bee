// A ring all-reduce simulated message by message: the reference the analytic model
// (RingAllReduceSeconds in pipette/cost/collectives.h) is checked against. O(n^2) messages, so
// for validation at small scale; the engine uses the analytic time at large scale.
#pragma once

#include <vector>

namespace simgrid::s4u {
class Host;
}

namespace pipette {

// Creates one actor per host of `ring` (in ring order) that together all-reduce `bytes`:
// 2(n-1) steps, each sending bytes/n to the next host and receiving from the previous one.
// After the engine runs, *finish holds the time the last actor finished. REQUIRES: a running
// engine's platform contains the hosts; `finish` outlives the run.
void LaunchRingAllReduce(const std::vector<simgrid::s4u::Host*>& ring, double bytes,
                         double* finish);

}  // namespace pipette
