// GradientReduction: the data-parallel gradient reduction of a simulated case as traffic on the
// platform, bucketed and optionally overlapped with the backward pass, as Megatron-LM's
// DistributedDataParallel does it (megatron/core/distributed/: param_and_grad_buffer.py,
// distributed_data_parallel_config.py).
//
// Buckets. Each pipeline rank's gradients are split per stage (chunk; Megatron keeps one buffer per
// model chunk, so a bucket never spans two) into buckets of at most `bucket_bytes`, filled from the
// stage's last layer to its first (the order the backward produces them): full buckets first, the
// remainder last. Megatron's default bucket is max(40 M, 1 M x dp) parameters
// (DefaultBucketParams), "larger DP sizes need larger buckets to ensure collectives do not become
// latency-bound".
//
// When. A stage's gradients are complete when the last instruction of the rank's program that
// produces weight gradients of it ends (the W, or B, of its last microbatch; an overlapped (F;B)
// cell's B half). Buckets start in the order their stages complete. With `overlap`
// (overlap_grad_reduce) a stage's buckets start as soon as it is complete, on a helper actor of the
// rank's host while the rank keeps computing; without it, all start after the rank's program. Each
// bucket is one all-reduce over the same rank of every replica (sim/collectives.h: ring or tree),
// the buckets of a rank one after the other (one NCCL communicator per data-parallel group runs its
// collectives in order). The optimizer step waits for every bucket. Every bucket's all-reduce is
// traced (AllReduceEvent: the member's start, end, its bytes).
//
// Experts. With expert parallelism (ep > 1) a stage's routed experts' gradients are held by the
// dp/ep replicas with the same d mod ep (each replica of an ep group holds other experts), so they
// reduce over that expert data-parallel group, as Megatron-LM's expert_parallel_buffers do over
// its expert data-parallel group: per stage the dense buckets first, then the experts' buckets,
// each bucket of one kind (Megatron keeps the two in separate buffers).
//
// Pure planning (PlanGradientBuckets) plus the per-rank runtime state (RankReducer), used only from
// the actors of one rank of one replica.
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/schedule/program.h"
#include "sim/collectives.h"

namespace pipette {

// How the data-parallel gradients are reduced: one analytic ring time after every replica's rank
// has finished (SimulationCase::allreduce), or a ring or tree all-reduce simulated as messages.
enum class GradReduce { kAnalytic, kRing, kTree };

// "analytic", "ring", "tree".
std::string_view GradReduceName(GradReduce mode);
// The inverse; InvalidArgument naming `key`, the value and the choices otherwise.
Result<GradReduce> ParseGradReduce(std::string_view text, std::string_view key);

// Megatron-LM's default bucket size in parameters: max(40,000,000, 1,000,000 x dp).
std::int64_t DefaultBucketParams(int dp);

// Most buckets one rank may have (a smaller --grad-bucket-params is refused with the count).
inline constexpr std::int64_t kMaxBucketsPerRank = 4096;

struct GradientBucket {
  int stage = 0;
  double bytes = 0;
  bool experts = false;  // reduced over the expert data-parallel group, not every replica
};

// One pipeline rank's buckets and when they become ready.
struct RankBuckets {
  std::vector<GradientBucket> buckets;  // in the order they start
  // Per stage of the rank, in the order they complete: the action of the program after which the
  // stage's gradients are complete, and how many buckets (a prefix of `buckets`) are ready then.
  std::vector<std::pair<Action, int>> completes;
};

// Every rank's buckets of `program`, whose stage s holds `stage_bytes[s]` bytes of gradients, of
// which `expert_bytes[s]` (<= stage_bytes[s]; empty: none) are routed experts', each kind split
// into buckets of at most `bucket_bytes` (> 0). Stages of no bytes have no bucket.
std::vector<RankBuckets> PlanGradientBuckets(const Program& program,
                                             const std::vector<double>& stage_bytes,
                                             double bucket_bytes,
                                             const std::vector<double>& expert_bytes = {});

// What a SimulationCase reduces as traffic (mode != kAnalytic): per pipeline rank its buckets.
struct GradientReduction {
  GradReduce mode = GradReduce::kAnalytic;
  bool overlap = false;
  // Expert parallelism: replicas d and d' hold the same experts when d = d' mod ep; an experts
  // bucket reduces over those dp/ep replicas. 1: no experts bucket.
  int ep = 1;
  std::vector<RankBuckets> ranks;

  bool simulated() const { return mode != GradReduce::kAnalytic; }
  // Messages one replica sends per step over all ranks' buckets (for the size estimate) when the
  // data-parallel groups have `replicas` members.
  std::int64_t MessagesPerReplicaStep(int replicas) const;
  // Actors per simulated rank: one more (its reducer) with overlap.
  int ActorsPerRank() const { return simulated() && overlap ? 2 : 1; }
};

// One member of a collective group: the group and the member's index in it.
struct GroupMember {
  const CollectiveGroup* group = nullptr;
  int member = 0;
};

// The gradient reduction of one rank of one replica: a member of its data-parallel group `dense`
// and, for experts buckets, of its expert data-parallel group `experts`.
class RankReducer {
 public:
  // `log` receives one event per bucket and step (rank `rank`); it and the others outlive the run.
  // REQUIRES: `experts.group` set when `plan` has an experts bucket.
  RankReducer(const RankBuckets& plan, GroupMember dense, GroupMember experts, int rank,
              bool overlap, std::vector<AllReduceEvent>* log);

  // From the rank's actor after its compute instruction `action` of `step` ended: with overlap,
  // the buckets of a stage it completes are released to Serve.
  void Computed(const Action& action, int step);
  // From the rank's actor after its program of `step`: without overlap runs every bucket, with
  // overlap releases what is left and waits until Serve has run them all.
  void Finish(int step);
  // With overlap, the helper actor's body: runs `steps` steps' buckets as they are released.
  void Serve(int steps);

 private:
  void Run(int step, const GradientBucket& bucket);
  void Release(std::int64_t total);

  const RankBuckets& plan_;
  const GroupMember dense_, experts_;
  const int rank_;
  const bool overlap_;
  std::vector<AllReduceEvent>* log_;
  // Buckets released and done, counted over every step (step s's bucket b is s * B + b).
  std::int64_t released_ = 0, done_ = 0;
  simgrid::s4u::MutexPtr mutex_;
  simgrid::s4u::ConditionVariablePtr changed_;
};

}  // namespace pipette
