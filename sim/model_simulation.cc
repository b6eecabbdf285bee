#include "sim/model_simulation.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "pipette/common/duration_limit.h"
#include "pipette/cost/collectives.h"
#include "sim/cluster_platform.h"
#include "sim/replica_symmetry.h"
#include "sim/simulation_size.h"

namespace pipette {
namespace {

// Per rank: the parameters (after tensor-parallel sharding) whose gradients it all-reduces.
std::vector<double> GradientParams(const ModelPlan& p) {
  std::vector<double> params(p.config.pp, 0.0);
  for (const StageInfo& stage : p.plan.stages) params[stage.rank] += stage.params_per_gpu;
  return params;
}

// Per rank: the routed experts' share of GradientParams (MoE; / ep).
std::vector<double> ExpertGradientParams(const ModelPlan& p) {
  std::vector<double> params(p.config.pp, 0.0);
  for (const StageInfo& stage : p.plan.stages) params[stage.rank] += stage.expert_params_per_gpu;
  return params;
}

// Seconds of rank r's ring all-reduce of `bytes` over the replicas 0, stride, 2 stride, ...
// (`count` of them), over the NICs when any hop of the ring leaves a node, else over NVLink.
double RingOf(const ModelPlan& p, int r, int count, int stride, double bytes) {
  const ParallelConfig& c = p.config;
  const int gpn = p.cluster.gpus_per_node;
  bool crosses_nodes = false;
  for (int k = 0; k < count; ++k) {
    crosses_nodes |= GpuOf(c, k * stride, r) / gpn != GpuOf(c, (k + 1) % count * stride, r) / gpn;
  }
  const LinkSpec& link = crosses_nodes ? p.cluster.inter_node : p.cluster.intra_node;
  return RingAllReduceSeconds(count, bytes, link);
}

// Per rank: seconds of its gradient all-reduce: the dense parameters' ring over the dp replicas,
// then (MoE with ep > 1) the experts' ring over the dp/ep replicas that hold the same experts.
std::vector<double> AllReduceSeconds(const ModelPlan& p, const std::vector<double>& params) {
  const ParallelConfig& c = p.config;
  const std::vector<double> experts = ExpertGradientParams(p);
  std::vector<double> seconds(c.pp, 0.0);
  for (int r = 0; r < c.pp; ++r) {
    const double dense = c.ep > 1 ? params[r] - experts[r] : params[r];
    seconds[r] = RingOf(p, r, c.dp, 1, dense * BytesOf(c.dtype));
    if (c.ep > 1) seconds[r] += RingOf(p, r, c.dp / c.ep, c.ep, experts[r] * BytesOf(c.dtype));
  }
  return seconds;
}

// The gradient bytes of the bucket size `o` asks for.
double BucketBytes(const ModelPlan& p, const ModelSimulationOptions& o) {
  return static_cast<double>(ResolvedOptions(p, o).grad_bucket_params) * BytesOf(p.config.dtype);
}

// Every rank's gradient buckets when `o` simulates the reduction on a cluster with dp > 1; else
// none (mode analytic). With ep > 1 each stage's routed experts' gradients (a GPU's share)
// reduce over the expert data-parallel group in buckets of their own.
GradientReduction ReductionOf(const ModelPlan& p, const ModelSimulationOptions& o) {
  GradientReduction g;
  if (o.ideal_network || p.config.dp <= 1 || o.grad_reduce == GradReduce::kAnalytic) return g;
  g.mode = o.grad_reduce;
  g.overlap = o.grad_overlap;
  g.ep = p.config.ep;
  std::vector<double> stage_bytes(p.plan.stages.size(), 0.0);
  std::vector<double> expert_bytes(p.plan.stages.size(), 0.0);
  for (const StageInfo& stage : p.plan.stages) {
    stage_bytes[stage.index] = stage.params_per_gpu * BytesOf(p.config.dtype);
    if (g.ep > 1) expert_bytes[stage.index] = stage.expert_params_per_gpu * BytesOf(p.config.dtype);
  }
  g.ranks = PlanGradientBuckets(p.program, stage_bytes, BucketBytes(p, o), expert_bytes);
  return g;
}

// The MoE all-to-all of the plan's stages, simulated on the cluster (ep > 1).
ExpertParallelism ExpertsOf(const ModelPlan& p) {
  ExpertParallelism experts;
  experts.ep = p.config.ep;
  for (const StageInfo& stage : p.plan.stages) {
    experts.stage_bytes.push_back(stage.alltoall_bytes);
    experts.stage_layers.push_back(stage.moe_layers);
  }
  return experts;
}

SimulationCase CaseOf(const ModelPlan& p, const ModelSimulationOptions& o,
                      const std::vector<double>& allreduce) {
  const ParallelConfig& c = p.config;
  SimulationCase one;
  one.program = &p.program;
  one.costs = o.costs ? *o.costs : p.plan.ToCosts();
  one.costs.overlap_alltoall = o.overlap_alltoall;
  for (const StageInfo& stage : p.plan.stages) {
    one.sizes.stage_output_bytes.push_back(stage.boundary_bytes / c.tp);
  }
  one.sizes.microbatch_scale = o.microbatch_scale;
  one.link_slowdowns = o.link_slowdowns;
  one.replica_symmetry = !o.every_replica;
  if (o.ideal_network) {
    one.latency = o.latency;
  } else {
    one.cluster = &p.cluster;
    one.replicas = c.dp;
    if (c.ep > 1) one.experts = ExpertsOf(p);
    for (int d = 0; d < c.dp; ++d) {
      for (int r = 0; r < c.pp; ++r) one.gpu_of_rank.push_back(GpuOf(c, d, r));
    }
  }
  one.steps = o.steps;
  one.grad_reduction = ReductionOf(p, o);
  if (c.dp > 1 && !one.grad_reduction.simulated()) one.allreduce = allreduce;
  return one;
}

// Memory over simulated time: static state plus the activations the executed order holds.
std::vector<RankMemoryTimeline> MemoryOf(const ModelPlan& p, const std::vector<TraceEvent>& trace) {
  std::vector<double> static_bytes;
  for (const MemoryBreakdown& m : p.rank_memory) {
    static_bytes.push_back(m.weights + m.gradients + m.optimizer);
  }
  std::vector<StageMemory> stage_memory;
  for (const StageInfo& stage : p.plan.stages) {
    stage_memory.push_back({stage.activation_bytes, stage.wgrad_input_bytes});
  }
  return MemoryOverTime(trace, static_bytes, stage_memory);
}

// FLOPs of one training step of every replica (forward, input-grad and weight-grad of every layer
// for every microbatch).
double ModelFlopsPerStep(const ModelPlan& p) {
  double flops = 0;
  for (std::size_t v = 0; v < p.model.num_layers(); ++v) {
    const Layer& layer = p.model.layer(v);
    flops += layer.fwd_flops + layer.igrad_flops + layer.wgrad_flops;
  }
  return flops * (static_cast<double>(p.config.microbatches) * p.config.dp);
}

// The summed peak FLOP/s of the GPUs the job uses (0 .. world_size - 1; each its own type on a
// mixed cluster).
double PeakFlops(const ModelPlan& p) {
  double sum = 0;
  for (int g = 0; g < p.config.world_size(); ++g) {
    const GpuSpec& gpu = p.cluster.GpuAt(g);
    const auto it = gpu.peak_flops.find(p.config.dtype);
    sum += it == gpu.peak_flops.end() ? 0.0 : it->second;
  }
  return sum;
}

// "cluster 'c': inter_node.bandwidth_gb_per_s = 50, latency_us = 5".
std::string LinkInputs(const ClusterSpec& cluster, bool inter) {
  const LinkSpec& link = inter ? cluster.inter_node : cluster.intra_node;
  return fmt::format("cluster '{}': {}.bandwidth_gb_per_s = {:g}, latency_us = {:g}", cluster.name,
                     inter ? "inter_node" : "intra_node", link.bandwidth / 1e9, link.latency * 1e6);
}

// Both links within the floors of cluster_spec.h (a cluster file enforces them; a ClusterSpec
// built in code may not).
Status CheckLinks(const ClusterSpec& cluster) {
  PIPETTE_RETURN_IF_ERROR(ValidateFabric(cluster));
  for (const bool inter : {false, true}) {
    const LinkSpec& link = inter ? cluster.inter_node : cluster.intra_node;
    if (!(link.bandwidth >= kMinBandwidth && link.bandwidth < HUGE_VAL && link.latency >= 0 &&
          link.latency <= kMaxLinkLatency)) {
      return Status::InvalidArgument(fmt::format(
          "{}: the bandwidth must be a finite number >= {:g} GB/s and the latency in [0, {:g}] us",
          LinkInputs(cluster, inter), kMinBandwidth / 1e9, kMaxLinkLatency * 1e6));
    }
  }
  return Status::Ok();
}

// Every stage's output message over the slowest link the job uses, and every all-reduce.
Status CheckTransferTimes(const ModelPlan& p, const std::vector<double>& allreduce) {
  const ParallelConfig& c = p.config;
  const bool spans_nodes = c.world_size() > p.cluster.gpus_per_node;
  const LinkSpec& link = spans_nodes ? p.cluster.inter_node : p.cluster.intra_node;
  // The longest route: through a fat-tree's core, four switch-to-switch hops.
  const double hops = spans_nodes && p.cluster.topology != Topology::kSingleSwitch
                          ? 4 * p.cluster.fabric.hop_latency
                          : 0.0;
  for (const StageInfo& stage : p.plan.stages) {
    const double bytes = static_cast<double>(stage.boundary_bytes) / c.tp;
    PIPETTE_RETURN_IF_ERROR(CheckDuration(
        link.latency + hops + bytes / link.bandwidth, LinkInputs(p.cluster, spans_nodes),
        fmt::format("stage {}'s output message ({:.3g} bytes)", stage.index, bytes)));
  }
  for (int r = 0; r < c.pp; ++r) {
    PIPETTE_RETURN_IF_ERROR(
        CheckDuration(allreduce[r],
                      fmt::format("--dp = {} on cluster '{}' (intra_node {:g} GB/s, inter_node "
                                  "{:g} GB/s)",
                                  c.dp, p.cluster.name, p.cluster.intra_node.bandwidth / 1e9,
                                  p.cluster.inter_node.bandwidth / 1e9),
                      fmt::format("rank {}'s gradient all-reduce", r)));
  }
  return Status::Ok();
}

// The gradient reduction `o` asks for: simulated only on a cluster, buckets of at least one
// parameter and at most kMaxBucketsPerRank per rank.
Status CheckGradientOptions(const ModelPlan& p, const ModelSimulationOptions& o) {
  if (o.grad_reduce != GradReduce::kAnalytic && o.ideal_network) {
    return Status::InvalidArgument(fmt::format(
        "--grad-reduce = {}: needs a cluster (the ideal network simulates one replica, so only "
        "analytic applies)",
        GradReduceName(o.grad_reduce)));
  }
  if (o.grad_bucket_params < 0) {
    return Status::InvalidArgument(fmt::format(
        "--grad-bucket-params = {}: must be a number of parameters >= 1 (0: Megatron's default)",
        o.grad_bucket_params));
  }
  if (o.grad_overlap && o.grad_reduce == GradReduce::kAnalytic && p.config.dp > 1) {
    return Status::InvalidArgument(
        "--grad-overlap with --grad-reduce = analytic: the analytic reduction is one time after "
        "every replica's program; overlap needs ring or tree");
  }
  const double bucket = BucketBytes(p, o) / BytesOf(p.config.dtype);
  for (int r = 0; r < p.config.pp; ++r) {
    double params = 0;
    for (const StageInfo& stage : p.plan.stages) {
      // Dense and experts' gradients are bucketed apart (ReductionOf).
      const double experts = p.config.ep > 1 ? stage.expert_params_per_gpu : 0.0;
      if (stage.rank == r) {
        params +=
            std::ceil((stage.params_per_gpu - experts) / bucket) + std::ceil(experts / bucket);
      }
    }
    if (params > kMaxBucketsPerRank) {
      return Status::InvalidArgument(fmt::format(
          "--grad-bucket-params = {}: rank {} would reduce {:.0f} buckets per step, more than {}",
          o.grad_bucket_params, r, params, kMaxBucketsPerRank));
    }
  }
  return Status::Ok();
}

// Per rank, from replica 0's step 0: the all-reduce seconds (simulated: the buckets' summed) and
// how long the reduction ran past the program; the analytic events get their bytes.
void ReductionTimes(const ModelPlan& p, const ModelSimulationOptions& o, ModelSimulation& m) {
  const GradientReduction g = ReductionOf(p, o);
  const std::vector<double> params = GradientParams(p);
  std::vector<double> program_end(p.config.pp, 0.0), reduce_end(p.config.pp, 0.0);
  for (const TraceEvent& e : m.sim.trace) {
    if (e.step == 0) program_end[e.rank] = std::max(program_end[e.rank], e.end);
  }
  if (g.simulated()) m.allreduce.assign(p.config.pp, 0.0);
  for (AllReduceEvent& a : m.sim.collectives) {
    if (!g.simulated())
      a.bytes = static_cast<std::int64_t>(params[a.rank] * BytesOf(p.config.dtype));
    if (a.step != 0) continue;
    if (g.simulated()) m.allreduce[a.rank] += a.end - a.start;
    reduce_end[a.rank] = std::max(reduce_end[a.rank], a.end);
  }
  m.allreduce_exposed.assign(p.config.pp, 0.0);
  for (int r = 0; r < p.config.pp; ++r) {
    m.allreduce_exposed[r] = std::max(0.0, reduce_end[r] - program_end[r]);
  }
  for (const RankBuckets& rank : g.ranks) m.grad_buckets += static_cast<int>(rank.buckets.size());
}

}  // namespace

Status CheckModelSimulation(const ModelPlan& p, const ModelSimulationOptions& o) {
  const ParallelConfig& c = p.config;
  PIPETTE_RETURN_IF_ERROR(CheckGradientOptions(p, o));
  // Alike replicas may run once, and a period of them may stand for all (CaseOf's
  // replica_symmetry, as SimulatedReplicas decides): only one is certain to run then; Simulate()
  // counts those that do once the platform is built, before any runs.
  const GradientReduction g = ReductionOf(p, o);
  const bool all_run = o.every_replica || g.mode == GradReduce::kTree;
  const bool experts = !o.ideal_network && c.ep > 1;
  std::int64_t routes = 0;
  if (!o.ideal_network) {
    PIPETTE_RETURN_IF_ERROR(CheckLinks(p.cluster));
    PIPETTE_RETURN_IF_ERROR(CheckTransferTimes(p, AllReduceSeconds(p, GradientParams(p))));
    std::vector<int> gpus;
    for (int d = 0; d < c.dp; ++d) {
      for (int r = 0; r < c.pp; ++r) gpus.push_back(GpuOf(c, d, r));
    }
    routes = ClusterPlatformRoutes(p.cluster, gpus, experts && c.ep == c.dp && !all_run);
  }
  const int replicas = o.ideal_network ? 1 : c.dp;
  const int timed = all_run ? replicas : FewestReplicasRunning(replicas, experts ? c.ep : 1);
  const std::int64_t messages = g.simulated() ? g.MessagesPerReplicaStep(replicas) : 0;
  // All-to-all comms are messages, each costing the solver's time more than one
  // (ExpertAllToAll::MessageEquivalents).
  const ExpertParallelism spec = experts ? ExpertsOf(p) : ExpertParallelism{};
  const std::int64_t between =
      SaturatingAdd(messages, ExpertAllToAll::CommsPerReplica(spec, p.program));
  const std::int64_t equivalents =
      SaturatingAdd(messages, ExpertAllToAll::MessageEquivalents(spec, p.program, timed));
  SimulationSize size = EstimateSimulationSize(
      SaturatingAdd(static_cast<std::int64_t>(p.program.num_instructions()), between),
      std::int64_t{c.pp} * g.ActorsPerRank(), replicas, o.steps, routes, between, timed,
      equivalents);
  size.lower_bound = timed < replicas;
  return CheckSimulationSize(size, fmt::format("--pp {} -v {} -m {} --dp {} --steps {}", c.pp, c.v,
                                               c.microbatches, c.dp, o.steps));
}

Result<ModelSimulation> SimulateModel(const ModelPlan& p, const ModelSimulationOptions& o) {
  PIPETTE_RETURN_IF_ERROR(CheckModelSimulation(p, o));
  const ParallelConfig& c = p.config;
  const std::vector<double> params = GradientParams(p);
  ModelSimulation m;
  m.allreduce = AllReduceSeconds(p, params);
  PIPETTE_ASSIGN_OR_RETURN(std::vector<SimulationResult> results,
                           Simulate({CaseOf(p, o, m.allreduce)}));
  m.sim = std::move(results.front());
  ReductionTimes(p, o, m);
  m.step_time = m.sim.makespan / o.steps;
  for (std::size_t s = 0; s < m.sim.step_end.size(); ++s) {
    m.step_times.push_back(m.sim.step_end[s] - (s == 0 ? 0.0 : m.sim.step_end[s - 1]));
  }
  m.memory = MemoryOf(p, m.sim.trace);
  for (const RankMemoryTimeline& line : m.memory) m.peak_memory.push_back(line.peak_bytes);
  m.oom = FirstOutOfMemory(m.memory, static_cast<double>(p.cluster.gpu.memory_bytes));
  const double flops =
      o.flops_per_replica_step > 0 ? o.flops_per_replica_step * c.dp : ModelFlopsPerStep(p);
  m.mfu = flops / (m.step_time * PeakFlops(p));
  double microbatches = c.microbatches;  // in reference-length units
  if (!o.microbatch_scale.empty()) {
    microbatches = 0;
    for (const double scale : o.microbatch_scale) microbatches += scale;
  }
  m.tokens_per_s = microbatches * c.micro_batch_size * c.seq_len * c.dp / m.step_time;
  return m;
}

ModelSimulationOptions ResolvedOptions(const ModelPlan& plan, ModelSimulationOptions options) {
  if (options.grad_bucket_params <= 0) {
    options.grad_bucket_params = DefaultBucketParams(plan.config.dp);
  }
  return options;
}

Status PriceUnevenWork(const ModelPlan& plan, const std::string& model, const UnevenWork& work,
                       ModelSimulationOptions& options) {
  if (work.IsEven()) return Status::Ok();
  const int m = plan.config.microbatches;
  std::map<int, double> flops;  // length -> FLOPs of one microbatch
  const CostsAtSeqlen costs_at = [&](int seq_len) -> Result<Costs> {
    PIPETTE_ASSIGN_OR_RETURN(StageCostsAtLength at, StageCostsAt(plan, model, seq_len));
    flops[seq_len] = at.model_flops;
    return std::move(at.costs);
  };
  PIPETTE_ASSIGN_OR_RETURN(options.costs,
                           ApplyUnevenWork(costs_at, plan.schedule.placement, m, work));
  options.microbatch_scale = SeqlenRatios(work);
  options.link_slowdowns = work.link_slowdowns;
  for (int mb = 0; mb < m; ++mb) options.flops_per_replica_step += flops.at(work.SeqlenOf(mb));
  return Status::Ok();
}

}  // namespace pipette
