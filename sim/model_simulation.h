// ModelSimulation: training steps of a partitioned model (partition/model_plan.h) on the SimGrid
// engine (simulator.h), and what they measure: step times, the data-parallel all-reduce of each
// rank, memory over simulated time and the first moment it exceeds the GPU, MFU and tokens/s.
//
// The GPU mapping: replica d's pipeline rank r runs on GPU (d*pp + r)*tp (its tensor-parallel
// group is that GPU .. +tp-1), and the messages between stages carry the stage output split over
// the tensor-parallel group. On the cluster every replica runs, each with its own actors and
// messages; on the ideal network only replica 0 does and every message takes a fixed latency.
// Each rank's gradient all-reduce (an analytic ring over the dp replicas, cost/collectives.h, over
// NVLink when the ring stays inside a node, else over the NICs; with expert parallelism the
// routed experts' gradients ring over the dp/ep replicas holding the same experts) follows its
// program at the end of every step, once the rank has finished in every replica (on the ideal
// network: in replica 0). MoE stages (ep > 1) exchange their all-to-all as comms on the cluster
// (sim/expert_alltoall.h), and on the ideal network take its analytic time (Costs::alltoall).
//
// SimulateModel calls Simulate(), so it may run once per process (SimGrid allows one engine).
#pragma once

#include <optional>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/partition/model_plan.h"
#include "sim/simulator.h"

namespace pipette {

struct ModelSimulationOptions {
  bool ideal_network = false;  // unbounded bandwidth: every message takes `latency`
  double latency = 0;          // seconds per message on the ideal network
  int steps = 1;               // training steps, back to back
  // Uneven work (schedule/uneven_work.h). The costs to run instead of the plan's (per-microbatch
  // lengths and rank speeds applied: ApplyUnevenWork); per microbatch, the factor its messages'
  // bytes are scaled by (its length over --seq-len; empty: 1); slow links; and the FLOPs of one
  // step of one replica for the MFU (0: m microbatches at --seq-len).
  std::optional<Costs> costs;
  std::vector<double> microbatch_scale;
  std::vector<LinkSlowdown> link_slowdowns;
  double flops_per_replica_step = 0;
  // MoE: whether an overlapped (F;B) cell hides its all-to-all behind its compute
  // (Costs::overlap_alltoall); false: the serial sum.
  bool overlap_alltoall = true;
};

struct ModelSimulation {
  // The engine's result (replica 0's trace, busy times, step ends, bubble ratio); its all-reduce
  // events carry the gradient bytes they reduce.
  SimulationResult sim;
  double step_time = 0;             // seconds per step, the mean over the steps
  std::vector<double> step_times;   // seconds of each step
  std::vector<double> allreduce;    // per rank: seconds of its all-reduce (0 with dp = 1)
  std::vector<double> peak_memory;  // per rank: bytes at its peak (memory[r].peak_bytes)
  // Per rank: its static state (weights, gradients, optimizer) plus the activations the executed
  // order holds, over simulated time.
  std::vector<RankMemoryTimeline> memory;
  std::optional<OutOfMemory> oom;  // the first moment a rank holds more than its GPU's memory
  double mfu = 0;                  // model FLOPs per step / (step_time * GPUs * peak FLOP/s)
  double tokens_per_s = 0;         // tokens of every replica per step / step_time
};

// Checks, before anything runs, what simulating `plan` derives from its cluster: every message's
// transfer time (latency + bytes / bandwidth of the slowest link the job uses) and every rank's
// all-reduce time within common/duration_limit.h, the links' bandwidths and latencies within the
// floors of cluster_spec.h, and the simulation's size (simulation_size.h). Returns
// InvalidArgument naming the input (cluster key, --dp, --pp, -m, --steps) and the rule.
Status CheckModelSimulation(const ModelPlan& plan, const ModelSimulationOptions& options);

// Simulates `plan` (its program, stage costs and per-rank memory) on its cluster. Errors:
// CheckModelSimulation()'s, then Simulate()'s (e.g. FailedPrecondition on a second call in one
// process, InvalidArgument for a negative latency).
Result<ModelSimulation> SimulateModel(const ModelPlan& plan, const ModelSimulationOptions& options);

}  // namespace pipette
