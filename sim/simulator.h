// Simulator: runs lowered pipeline programs on a SimGrid 3.32 platform, one actor per rank, each
// through the interpreter loop shared with the real engines (RunRank). SimGrid calls live only in
// sim/.
//
// A case runs either on a cluster platform (cluster_platform.h: NVLink ports, rail NICs, node
// uplinks; messages of their real size) or on an ideal network: every message takes exactly the
// case's fixed latency (CM02 without cross-traffic or TCP-gamma bound; unbounded bandwidth, so
// messages are simulated as 0 bytes while the trace keeps their real size). A send starts a
// host-to-host transfer at once, whether or not the receiver is ready: evaluate()'s model. The
// cluster platform (NVLink stars, InfiniBand fat-tree), data parallelism and memory tracking build
// on this.
//
// SimGrid allows one engine per process, so Simulate() runs every case it is given side by side in
// one engine (separate hosts and links: the cases do not interact) and may be called
// once per process.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/common/status.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/engine/rank_runtime.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/uneven_work.h"
#include "sim/expert_alltoall.h"
#include "sim/gradient_reduction.h"

namespace pipette {

struct SimulationCase {
  const Program* program = nullptr;
  Costs costs;         // one entry per stage, seconds (per microbatch with uneven work)
  MessageSizes sizes;  // bytes per message (traced; simulated on a cluster)
  double latency = 0;  // ideal network: seconds per message
  // A cluster instead of the ideal network: rank r of replica d runs on GPU
  // gpu_of_rank[d * p + r] (node * gpus_per_node + gpu) and messages of their real size cross the
  // platform of cluster_platform.h. nullptr: the ideal network.
  const ClusterSpec* cluster = nullptr;
  std::vector<int> gpu_of_rank;
  // Data-parallel replicas of the pipeline run side by side, each with its own actors and
  // messages (on the cluster contending for the links they share).
  int replicas = 1;
  // Slow links between pipeline ranks (schedule/uneven_work.h), in every replica: a message
  // between ranks a and b takes `factor` times as long on an idle network. It carries factor x its
  // bytes (so the bandwidth part scales, and contends as that much traffic) and starts
  // (factor - 1) x its route's latency after its SEND (a relay actor waits on the sender's host).
  std::vector<LinkSlowdown> link_slowdowns;
  // Training steps, run back to back: each rank starts step s+1 when its step s (all-reduce
  // included) is over.
  int steps = 1;
  // Per rank, seconds of its data-parallel gradient all-reduce (empty: none). At the end of every
  // step, rank r waits until rank r of every replica has finished its program, then all-reduces
  // for this long (an analytic collective: cost/collectives.h).
  std::vector<double> allreduce;
  // Or the gradient reduction as simulated traffic (sim/gradient_reduction.h: buckets, ring or tree
  // collectives over the same rank of every replica, overlapped with the backward or after the
  // program); needs a cluster, and `allreduce` empty. Its mode kAnalytic: not used.
  GradientReduction grad_reduction;

  // What a real engine adds around the schedule (simulate --costs-from predicts a measured run):
  // Ideal network: a message takes latency + bytes * seconds_per_byte (an alpha-beta link; 0:
  // latency only).
  double seconds_per_byte = 0;
  // Seconds of the rank's own time before every instruction, outside its traced event (an
  // engine's dispatch: bookkeeping, posting a message; RankRuntime::Dispatch).
  double instruction_overhead = 0;
  // Per rank, seconds of its parameter update after every step (empty: none); traced as updates.
  std::vector<double> optimizer;
  // Every step starts when every rank of every replica is ready (the real engines' barrier);
  // false: each rank starts its next step when its own step is over.
  bool step_barrier = false;
  // > 0: the ranks' compute (costs, overhead, optimizer) runs on one shared host of this many
  // cores, each as fast as one rank alone: more busy ranks than cores share them (a CPU engine's
  // machine, oversubscribed). 0: every rank computes on its own device.
  int cores = 0;
  // Simulate only the replicas that can differ (replica_symmetry.h): replicas whose routes share
  // no link with another replica's and match another's link for link run as that one does. Off:
  // every replica runs (to check the symmetry). Never with shared cores.
  bool replica_symmetry = true;
  // MoE expert parallelism on the cluster (sim/expert_alltoall.h): each MoE stage's F, I and B
  // exchange its all-to-all bytes with the same rank of the other replicas of its ep group as
  // comms on the platform, and computes take costs.Compute (the costs' own all-to-all seconds
  // are not added). Needs a cluster and replicas divisible by ep; ep = 1: none (on the ideal
  // network the costs' all-to-all seconds, Costs::alltoall, are the all-to-all).
  ExpertParallelism experts;
  // A machine whose speed varies from step to step (fidelity/recorded_work.h, StepSlowdowns): per
  // step (step s takes row s mod the rows), per rank, the factor its computes' seconds are
  // multiplied by. Empty: 1. Not with expert parallelism.
  std::vector<std::vector<double>> step_slowdown;
};

struct SimulationResult {
  // Seconds from the common start to the end of everything (every replica, step and all-reduce).
  double makespan = 0;
  std::vector<double> step_end;  // per step: when its last action or all-reduce ended
  // Replica 0, step 0: the end of its last instruction (the schedule's makespan, evaluate()'s on
  // the ideal network), the busy time per rank and the bubble ratio 1 - sum(busy) / (p * that).
  double pipeline_makespan = 0;
  double bubble_ratio = 0;
  std::vector<double> busy;
  // Replica 0: every executed instruction of every step, rank by rank, step by step, in program
  // order; and every all-reduce, rank by rank.
  std::vector<TraceEvent> trace;
  // start: when every replica's rank had finished; with simulated gradient reduction one per
  // bucket, from when this member started it
  std::vector<AllReduceEvent> collectives;
  std::vector<AllReduceEvent> updates;  // replica 0: each rank's parameter update per step
  std::vector<Span> step_spans;  // replica 0, per step: earliest start to latest end over ranks
  int simulated_replicas = 1;    // replicas whose actors ran (the others are copies of one)
};

// What a long simulation reports as it runs (pipette simulate's progress line): `report` is called
// from inside the simulation every `every` executed instructions (over every case) with how many
// have executed, how many will (every simulated replica's, every step's) and the simulated time so
// far. It only observes: the simulation is the same with or without it, and it must not call
// SimGrid.
struct SimulationProgress {
  std::function<void(std::int64_t executed, std::int64_t total, double simulated_s)> report;
  std::int64_t every = std::int64_t{1} << 14;
  // Called once when the simulation has ended (before its results are collected), if set.
  std::function<void()> finished;
};

// The progress report of this process's Simulate() (one simulation per process, as SimGrid has one
// engine); an empty `report`: none (the default).
void SetSimulationProgress(SimulationProgress progress);

// Returns one result per case, or FailedPrecondition on a second call in the same process, or
// InvalidArgument for a case without a program, with costs of the wrong shape (Costs::Check), a
// link slowdown out of range, a negative or
// non-finite latency, seconds per byte, overhead or core count, replicas < 1, steps < 1,
// all-reduce or optimizer times not one finite non-negative value per rank, a simulated gradient
// reduction without a cluster, beside all-reduce times or without one bucket list of finite
// non-negative sizes per rank, a GPU mapping that is
// all-reduce or optimizer times not one finite non-negative value per rank, expert parallelism
// without a cluster, with replicas not divisible by ep or stage vectors of the wrong size, a GPU
// mapping that is
// not one distinct GPU of the cluster per rank of every replica, or a case over the limits of
// simulation_size.h (with the estimate). Every check runs before the engine starts.
Result<std::vector<SimulationResult>> Simulate(const std::vector<SimulationCase>& cases);

}  // namespace pipette
