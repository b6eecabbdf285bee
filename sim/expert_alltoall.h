// ExpertAllToAll: the MoE all-to-all of one simulation case on its cluster platform, as SimGrid
// comms between the same pipeline rank of the replicas of each expert-parallel group.
//
// Expert parallelism (cluster/parallel_config.h): replicas g*ep .. g*ep+ep-1 form a group; an MoE
// stage's forward runs its compute, then a dispatch and a combine phase; an input-gradient or
// full backward the same two phases (their gradients); a weight-gradient backward none. The
// stage's MoE layers are aggregated (the comm count stays bounded): each phase carries the sum of
// their bytes and waits the sum of their latencies, i.e. the rank first sleeps (layers - 1) x the
// slowest route latency to its peers, then sends bytes/ep to each of its ep-1 peers at once
// (host-to-host comms, contending with every other comm of the case) and the phase ends when the
// ep-1 messages of the same phase from its peers have arrived. On an idle
// network a phase therefore takes cost/collectives.h's AllToAllSeconds for the group's links.
// An overlapped (F;B) cell (Costs::overlap_alltoall) runs both halves' compute while both halves'
// phases run one after the other, and ends when both are done; without the overlap model it runs
// F's compute and phases, then B's.
//
// Under period symmetry (replica_symmetry.h, ReplicaPeriod) only replicas 0 .. k-1 run: a message
// to replica e >= k goes to replica e mod k, or, when that is the sender's own replica, to the
// sender's mirror (cluster_platform.h), and its receiver takes it as the message of the sender
// whose copy it is (the full run's message into e's copy e mod k), so every rank still waits for
// the ep - 1 messages of each phase.
//
// Shared by every actor of the case (SimGrid runs one actor at a time; its mutex orders them).
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "pipette/schedule/action.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/program.h"
#include "sim/cluster_platform.h"

namespace pipette {

// What a case's MoE stages exchange (SimulationCase::experts). ep = 1: no all-to-all.
struct ExpertParallelism {
  int ep = 1;
  // Per stage: the bytes one GPU sends in one phase (the sum over the stage's MoE layers, all
  // peers together) and the number of those layers (0: a dense stage).
  std::vector<std::int64_t> stage_bytes;
  std::vector<int> stage_layers;

  bool active() const { return ep > 1; }
};

class ExpertAllToAll {
 public:
  // `hosts`: replica d's rank r at d * p + r, every replica; replicas 0 .. running-1 run (0: all;
  // fewer only under a period that ReplicaPeriod found, with `mirrors` when running < spec.ep).
  // REQUIRES: a SimGrid engine exists, the platform is sealed, replicas divisible by spec.ep,
  // stage vectors sized to the program's stages.
  ExpertAllToAll(const ExpertParallelism& spec, std::vector<simgrid::s4u::Host*> hosts, int p,
                 int running = 0, const MirrorHosts* mirrors = nullptr);

  // Runs compute action `a` of step `step` on replica `replica`'s rank `rank`, from that rank's
  // actor: its compute (costs.Compute of each half, executed on `compute`, nullptr: the rank's
  // host) and its all-to-all phases as described above.
  void Run(const Action& a, const Costs& costs, int step, int replica, int rank,
           simgrid::s4u::Host* compute);

  // The comms one replica's `program` starts in all-to-all phases per step (for the size
  // estimate): ep - 1 per phase, 2 phases per F, I or B of an MoE stage, 4 per overlapped cell of
  // two. REQUIRES: stage vectors sized to the program's stages.
  static std::int64_t CommsPerReplica(const ExpertParallelism& spec, const Program& program);

  // What those comms cost the engine's time, in messages between replicas (simulation_size.h's
  // time model): SimGrid's max-min solver slows with the flows in flight, so a comm counts as
  // max(1, ep^2 / 32) messages where every replica of a group runs (measured, one core, moe-small
  // pp4 dp64 1f1b m8: 15, 44 and 150 us per comm at ep 8, 16 and 32; an instruction is about 9 us)
  // and max(1, ep^2 / 128) where only `running` < ep replicas run for all, with mirrors
  // (deepseek-v3 pp16 dp = ep 32 and 64, m16, two replicas run: about 17 and 38 us per comm;
  // sim/README.md).
  static std::int64_t MessageEquivalents(const ExpertParallelism& spec, const Program& program,
                                         int running = 0);

 private:
  // (step, stage, microbatch, phase 0..3, sending replica of the full run): one message into a
  // receiver.
  using Key = std::tuple<int, int, int, int, int>;

  // The phases of one half (an F, I or B): 0, 1 for a forward; 2, 3 for a backward.
  void Phases(const Action& half, int step, int replica, int rank);
  void Phase(const Action& half, int phase, int step, int replica, int rank);
  simgrid::s4u::Host* HostOf(int replica, int rank) const { return hosts_[replica * p_ + rank]; }

  ExpertParallelism spec_;
  std::vector<simgrid::s4u::Host*> hosts_;
  int p_;
  int replicas_;
  int running_;
  const MirrorHosts* mirrors_;
  simgrid::s4u::MutexPtr mutex_;
  std::vector<simgrid::s4u::ConditionVariablePtr> arrived_;      // per receiver (d * p + r)
  std::vector<std::map<Key, simgrid::s4u::CommPtr>> in_flight_;  // per receiver
  std::vector<double> max_latency_;                              // per (d * p + r), -1: unknown
};

}  // namespace pipette
