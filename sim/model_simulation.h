// ModelSimulation: training steps of a partitioned model (partition/model_plan.h) on the SimGrid
// engine (simulator.h), and what they measure: step times, the data-parallel all-reduce of each
// rank, memory over simulated time and the first moment it exceeds the GPU, MFU and tokens/s.
//
// The GPU mapping: GpuOf (cluster/parallel_config.h, the config's --placement-order; by default
// replica d's pipeline rank r on GPU (d*pp + r)*tp, its tensor-parallel group that GPU ..
// +tp-1), and the messages between stages carry the stage output split over
// the tensor-parallel group. On the cluster every replica is simulated, each with its own actors
// and messages (replicas the network provably cannot tell apart run once: replica_symmetry.h;
// every one with simulated gradient reduction or MoE all-to-all, whose messages join them); on
// the ideal network only replica 0 runs and every message takes a fixed latency.
// Each rank's gradient reduction over the dp replicas (ModelSimulationOptions::grad_reduce) is
// either bucketed ring or tree all-reduces simulated as messages on the cluster
// (sim/gradient_reduction.h), or an analytic ring (cost/collectives.h, over NVLink when the ring
// stays inside a node, else over the NICs; with expert parallelism the routed experts' gradients
// ring over the dp/ep replicas holding the same experts) after its program at the end of every
// step, once the rank has finished in every replica (on the ideal network: in replica 0). MoE
// stages (ep > 1) exchange their all-to-all as comms on the cluster (sim/expert_alltoall.h), and
// on the ideal network take its analytic time (Costs::alltoall).
//
// SimulateModel calls Simulate(), so it may run once per process (SimGrid allows one engine).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/partition/model_plan.h"
#include "pipette/schedule/uneven_work.h"
#include "sim/simulator.h"

namespace pipette {

struct ModelSimulationOptions {
  bool ideal_network = false;  // unbounded bandwidth: every message takes `latency`
  double latency = 0;          // seconds per message on the ideal network
  int steps = 1;               // training steps, back to back
  // Run every data-parallel replica, even those the network cannot make differ from another
  // (sim/replica_symmetry.h: by default only the distinct ones run; the results are the same).
  bool every_replica = false;
  // Uneven work (schedule/uneven_work.h). The costs to run instead of the plan's (per-microbatch
  // lengths and rank speeds applied: ApplyUnevenWork); per microbatch, the factor its messages'
  // bytes are scaled by (its length over --seq-len; empty: 1); slow links; and the FLOPs of one
  // step of one replica for the MFU (0: m microbatches at --seq-len).
  std::optional<Costs> costs;
  std::vector<double> microbatch_scale;
  std::vector<LinkSlowdown> link_slowdowns;
  double flops_per_replica_step = 0;
  // The data-parallel gradient reduction (sim/gradient_reduction.h): analytic (the ring time after
  // every replica's rank has finished), or ring / tree collectives simulated on the cluster, in
  // buckets of `grad_bucket_params` parameters (0: Megatron's default, DefaultBucketParams),
  // started as each stage's gradients are complete with `grad_overlap`, else after the program.
  // On the ideal network (one replica simulated) only analytic applies.
  GradReduce grad_reduce = GradReduce::kAnalytic;
  bool grad_overlap = false;
  std::int64_t grad_bucket_params = 0;
  // MoE: whether an overlapped (F;B) cell hides its all-to-all behind its compute
  // (Costs::overlap_alltoall); false: the serial sum.
  bool overlap_alltoall = true;
};

struct ModelSimulation {
  // The engine's result (replica 0's trace, busy times, step ends, bubble ratio); its all-reduce
  // events carry the gradient bytes they reduce.
  SimulationResult sim;
  double step_time = 0;            // seconds per step, the mean over the steps
  std::vector<double> step_times;  // seconds of each step
  // Per rank: seconds of its all-reduce (0 with dp = 1); simulated: its buckets' all-reduces in
  // step 0 of replica 0, summed.
  std::vector<double> allreduce;
  // Per rank: how long after its program's last instruction (step 0, replica 0) its reduction
  // ended: the part of the reduction the step pays (0 when it all ran under compute).
  std::vector<double> allreduce_exposed;
  int grad_buckets = 0;  // simulated: buckets over every rank (per replica and step); else 0
  std::vector<double> peak_memory;  // per rank: bytes at its peak (memory[r].peak_bytes)
  // Per rank: its static state (weights, gradients, optimizer) plus the activations the executed
  // order holds, over simulated time.
  std::vector<RankMemoryTimeline> memory;
  std::optional<OutOfMemory> oom;  // the first moment a rank holds more than its GPU's memory
  double mfu = 0;                  // model FLOPs per step / (step_time * GPUs * peak FLOP/s)
  double tokens_per_s = 0;         // tokens of every replica per step / step_time
};

// `options` with the defaults SimulateModel takes filled in, as a report of the run shows and
// records them: grad_bucket_params, when 0, Megatron's default for the plan's dp
// (DefaultBucketParams). Everything else as given.
ModelSimulationOptions ResolvedOptions(const ModelPlan& plan, ModelSimulationOptions options);

// Prices `work` for the model path into `options`: every distinct microbatch length's stage costs
// from `model` (the preset or file `plan` was built from: StageCostsAt, partition/model_plan.h),
// the rank speeds folded in (ApplyUnevenWork), the messages scaled with the lengths, the slow
// links, and the FLOPs of one replica's step. Even work leaves `options` as it is.
Status PriceUnevenWork(const ModelPlan& plan, const std::string& model, const UnevenWork& work,
                       ModelSimulationOptions& options);

// Checks, before anything runs, what simulating `plan` derives from its cluster: every message's
// transfer time (latency + bytes / bandwidth of the slowest link the job uses) and every rank's
// all-reduce time within common/duration_limit.h, the links' bandwidths and latencies within the
// floors of cluster_spec.h, and the simulation's size (simulation_size.h). Returns
// InvalidArgument naming the input (cluster key, --dp, --pp, -m, --steps, --grad-reduce,
// --grad-bucket-params) and the rule.
Status CheckModelSimulation(const ModelPlan& plan, const ModelSimulationOptions& options);

// Simulates `plan` (its program, stage costs and per-rank memory) on its cluster. Errors:
// CheckModelSimulation()'s, then Simulate()'s (e.g. FailedPrecondition on a second call in one
// process, InvalidArgument for a negative latency).
Result<ModelSimulation> SimulateModel(const ModelPlan& plan, const ModelSimulationOptions& options);

}  // namespace pipette
