// MakeEngine: the process's SimGrid engine, configured for GPU fabrics. SimGrid's defaults distort
// them (LV08 multiplies latency by 13, cross-traffic adds reverse flows, a TCP window bound caps
// fast links), so the network model is plain CM02: a message takes latency + size / bandwidth,
// and rates are recomputed in full at every change (3.32's lazy update overfills contended links).
// Logging is limited to critical messages; actor stacks have no guard page, so tens of thousands
// of actors fit. SimGrid 3.32 allows one engine per process. In AddressSanitizer builds actors run
// as threads (contexts/factory:thread), whose stacks ASan follows.
#pragma once

#include <memory>

namespace simgrid::s4u {
class Engine;
}

namespace pipette {

std::unique_ptr<simgrid::s4u::Engine> MakeEngine();

}  // namespace pipette
