// SimGridRuntime: the RankRuntime of one pipeline rank of one replica on a SimGrid 3.32 actor.
//
// Compute executes the cost model's seconds on a host of speed 1 flop/s (so simulated time is
// exactly the cost), a message is a host-to-host comm handed over through the replica's Channels,
// and the data-parallel all-reduce waits for the same rank of every replica (a barrier), then
// takes the analytic collective's time. The runtime holds the costs: real engines have none.
// Used only from its actor; a Channels is shared by the actors of one replica (SimGrid runs actors
// one at a time, its mutex orders them in simulated time).
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "pipette/engine/rank_runtime.h"
#include "pipette/schedule/costs.h"

namespace pipette {

// The messages of one replica of one case in flight: the sender starts a host-to-host comm and
// registers it under the message's key; the receiver waits for the registration, then for the
// comm. SimGrid computes the transfer, so the data lands at the send time plus the route's time
// whenever the receiver looks. (Eager mailboxes with a permanent receiver do not work for this in
// 3.32: a get posted while the put is in flight completes at once.)
struct Channels {
  std::map<std::pair<int, std::int64_t>, simgrid::s4u::CommPtr> in_flight;  // (step, message key)
  simgrid::s4u::MutexPtr mutex;
  std::vector<simgrid::s4u::ConditionVariablePtr> arrived;  // one per receiving rank
  std::vector<simgrid::s4u::Host*> hosts;                   // one per rank
  bool real_sizes = false;  // messages carry their bytes (cluster); else 0 bytes (ideal network)

  // REQUIRES: a SimGrid engine exists.
  explicit Channels(std::vector<simgrid::s4u::Host*> rank_hosts, bool carry_bytes);
};

class SimGridRuntime final : public RankRuntime {
 public:
  // With `replicas` (a barrier of this rank in every replica) the rank all-reduces after each
  // step: it waits for the barrier, then takes `allreduce_seconds` (a zero-length all-reduce is
  // still recorded); nullptr: it does not all-reduce.
  SimGridRuntime(Channels& channels, int rank, const Costs& costs,
                 simgrid::s4u::BarrierPtr replicas, double allreduce_seconds);

  double Now() override;
  void Compute(const Instruction& ins) override;
  void Send(const Instruction& ins, std::int64_t bytes) override;
  void PostRecv(const Instruction&, std::int64_t) override {}
  double WaitRecv(const Instruction& ins) override;

  Status BeginStep(int step) override;
  std::optional<Span> ReduceGradients(int step) override;

 private:
  Channels& channels_;
  const int rank_;
  const Costs& costs_;
  simgrid::s4u::BarrierPtr replicas_;
  const double allreduce_seconds_;
  int step_ = 0;
};

}  // namespace pipette
