// SimGridRuntime: the RankRuntime of one pipeline rank of one replica on a SimGrid 3.32 actor.
//
// Compute executes the cost model's seconds on a host of speed 1 flop/s (so simulated time is
// exactly the cost; on a shared multicore host, the cost when no more ranks compute than it has
// cores), a message is a host-to-host comm handed over through the replica's Channels,
// and the data-parallel all-reduce waits for the same rank of every replica (a barrier), then
// takes the analytic collective's time. The runtime holds the costs: real engines have none.
// Used only from its actor; a Channels is shared by the actors of one replica (SimGrid runs actors
// one at a time, its mutex orders them in simulated time).
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pipette/engine/rank_runtime.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/uneven_work.h"
#include "sim/expert_alltoall.h"

namespace pipette {

// The messages of one replica of one case in flight: the sender starts a host-to-host comm and
// registers it under the message's key; the receiver takes it from there and waits for it (a slowed
// link's comm is registered when it starts). SimGrid computes the transfer, so the data lands at
// the send time plus the route's time whenever the receiver looks. (Eager mailboxes with a
// permanent receiver do not work for this in 3.32: a get posted while the put is in flight
// completes at once.)
//
// No lock: SimGrid runs one actor at a time and switches only inside its own calls, so the map is
// never seen half-updated. A receiver that finds no message suspends itself; the sender of the key
// it waits for resumes it. A receiver that finds its comm already done takes the finish time and
// never waits: SimGrid 3.32 keeps every host-to-host comm (detached in its kernel) in one global
// list and removes it with a list scan when it finishes and again when it is waited on, so each
// wait on a finished comm costs a scan of every comm in flight in the simulation (sim/README.md).
struct Channels {
  using Key = std::pair<int, std::int64_t>;  // (step, message key)
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<std::int64_t>{}(k.second * 1000003 + k.first);
    }
  };
  std::unordered_map<Key, simgrid::s4u::CommPtr, KeyHash> in_flight;
  // Per receiving rank: the key it is suspended on, and its actor (nullptr: not waiting).
  struct Waiting {
    Key key{};
    simgrid::s4u::Actor* actor = nullptr;
  };
  std::vector<Waiting> waiting;
  std::vector<simgrid::s4u::Host*> hosts;  // one per rank
  bool real_sizes = false;  // messages carry their bytes (cluster, alpha-beta); else 0 bytes
  // Slow links, per slowed (sender, receiver) rank pair only (memory grows with the slowdowns, not
  // with p): the factor a message's bytes are multiplied by, and how long after its SEND its comm
  // starts.
  struct SlowLink {
    double factor = 1.0;
    double delay = 0.0;
  };
  std::map<std::pair<int, int>, SlowLink> slow_links;

  // REQUIRES: a SimGrid engine exists.
  explicit Channels(std::vector<simgrid::s4u::Host*> rank_hosts, bool carry_bytes);
  // Slows the links of `slowdowns` (ranks in range, factor >= 1): a message between a and b
  // carries factor x its bytes and starts (factor - 1) x the route's latency after its SEND, so on
  // an idle network it takes factor x as long. REQUIRES: the platform is sealed.
  void SlowLinks(const std::vector<LinkSlowdown>& slowdowns);
  // Starts `comm` and registers it under `key` for rank `receiver` (resuming it if it waits for
  // `key`).
  void Post(Key key, simgrid::s4u::CommPtr comm, int receiver);
  // Rank `receiver`'s message `key`: waits until it is posted and has arrived, removes it and
  // returns the simulated time it arrived. Called from `receiver`'s actor.
  double Receive(Key key, int receiver);
};

// What one rank's runtime spends its time on besides messages.
class RankReducer;

// The instructions every rank of a simulation has executed, reported every `every`
// (SimulationProgress).
struct InstructionCounter {
  std::int64_t executed = 0;
  std::int64_t total = 0;
  std::int64_t every = 1;
  std::int64_t next = 0;  // the count of the next report
  std::function<void(std::int64_t, std::int64_t, double)> report;
  // One more instruction; reports when it is due.
  void Count();
};

struct RankWork {
  const Costs* costs = nullptr;           // per stage, seconds
  double instruction_overhead = 0;        // seconds of rank time per instruction beyond its cost
  double allreduce_seconds = 0;           // the data-parallel all-reduce (with `replicas`)
  double optimizer_seconds = 0;           // the parameter update after every step
  simgrid::s4u::Host* compute = nullptr;  // where its compute executes; nullptr: its own host
  // The gradient reduction simulated as traffic (sim/gradient_reduction.h), instead of the
  // barrier and allreduce_seconds; nullptr: none.
  RankReducer* reducer = nullptr;
  // MoE on the cluster: the case's all-to-all (nullptr: compute takes costs->Of) and the replica
  // this rank belongs to.
  ExpertAllToAll* experts = nullptr;
  int replica = 0;
  // Per step (step s takes entry s mod the size): the factor its computes' seconds are multiplied
  // by (SimulationCase::step_slowdown); empty: 1.
  std::vector<double> step_slowdown;
  InstructionCounter* counter = nullptr;  // counts every instruction (progress); nullptr: none
};

class SimGridRuntime final : public RankRuntime {
 public:
  // With `replicas` (a barrier of this rank in every replica) the rank all-reduces after each
  // step: it waits for the barrier, then takes work.allreduce_seconds (a zero-length all-reduce is
  // still recorded); nullptr: it does not all-reduce. With work.reducer the reduction is its
  // buckets' collectives instead (each traced by the reducer; ReduceGradients returns nullopt).
  // With `step_barrier` (every rank of every replica) each step starts when all have reached it.
  SimGridRuntime(Channels& channels, int rank, const RankWork& work,
                 simgrid::s4u::BarrierPtr replicas, simgrid::s4u::BarrierPtr step_barrier);

  double Now() override;
  void Dispatch(const Instruction& ins) override;
  void Compute(const Instruction& ins) override;
  void Send(const Instruction& ins, std::int64_t bytes) override;
  void PostRecv(const Instruction&, std::int64_t) override {}
  double WaitRecv(const Instruction& ins) override;

  Status BeginStep(int step) override;
  std::optional<Span> ReduceGradients(int step) override;
  Status UpdateParameters(int step) override;

 private:
  // Spends `seconds` of this rank's compute (on the shared cores when there are).
  void Work(double seconds);

  Channels& channels_;
  const int rank_;
  const RankWork work_;
  simgrid::s4u::BarrierPtr replicas_;
  simgrid::s4u::BarrierPtr step_barrier_;
  int step_ = 0;
};

}  // namespace pipette
