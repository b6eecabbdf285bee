#include "sim/simulator.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>

#include "pipette/engine/step_loop.h"
#include "sim/cluster_platform.h"
#include "sim/replica_symmetry.h"
#include "sim/ring_allreduce.h"
#include "sim/sim_engine.h"
#include "sim/simgrid_runtime.h"
#include "sim/simulation_size.h"

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

// Whether every replica of `sc` runs whatever its platform (otherwise alike replicas, or a period
// of them, may run for all: SimulatedReplicas): without the symmetry, on shared cores, or with
// trees (which have no period).
bool EveryReplicaRuns(const SimulationCase& sc) {
  return !sc.replica_symmetry || sc.cores != 0 || sc.grad_reduction.mode == GradReduce::kTree;
}

// Whether the platform of `sc` needs mirrors: its all-to-all spans every replica, which a period
// shorter than the replicas may then stand for (replica_symmetry.h).
bool NeedsMirrors(const SimulationCase& sc) {
  return sc.cluster != nullptr && sc.experts.active() && sc.experts.ep == sc.replicas &&
         !EveryReplicaRuns(sc);
}

// Whether some rank reduces an experts bucket (over the replicas with the same d mod ep).
bool HasExpertBuckets(const GradientReduction& g) {
  return std::any_of(g.ranks.begin(), g.ranks.end(), [](const RankBuckets& r) {
    return std::any_of(r.buckets.begin(), r.buckets.end(),
                       [](const GradientBucket& b) { return b.experts; });
  });
}

// Each step slowdown row holds one factor in (0, 100] per rank, and none goes with experts.
Status CheckStepSlowdown(const SimulationCase& c, std::size_t index) {
  for (const std::vector<double>& step : c.step_slowdown) {
    if (static_cast<int>(step.size()) != c.program->p || c.experts.active()) {
      return Status::InvalidArgument(fmt::format(
          "simulation case {}: a step slowdown of {} ranks for {} ranks{}: one factor per rank, "
          "without expert parallelism",
          index, step.size(), c.program->p, c.experts.active() ? " with experts" : ""));
    }
    for (const double f : step) {
      if (!(f > 0 && f <= 100)) {
        return Status::InvalidArgument(fmt::format(
            "simulation case {}: step slowdown {}: must be a number in (0, 100]", index, f));
      }
    }
  }
  return Status::Ok();
}

// OK when `seconds` is empty or one finite non-negative value per rank of `p`.
Status CheckPerRank(const std::vector<double>& seconds, int p, const char* what,
                    std::size_t index) {
  if (seconds.empty()) return Status::Ok();
  if (static_cast<int>(seconds.size()) != p) {
    return Status::InvalidArgument(fmt::format("simulation case {}: {} {} times for {} ranks",
                                               index, seconds.size(), what, p));
  }
  for (const double t : seconds) {
    if (!(t >= 0 && t <= kMaxCost)) {
      return Status::InvalidArgument(
          fmt::format("simulation case {}: {} time {}: must be a number in [0, {:g}]", index, what,
                      t, kMaxCost));
    }
  }
  return Status::Ok();
}

// The size of case `c` on a platform of `routes` routes, its gradient reduction's messages and
// reducer actors included.
SimulationSize SizeOf(const SimulationCase& c, std::int64_t routes, int running_replicas = -1) {
  const GradientReduction& g = c.grad_reduction;
  const std::int64_t messages = g.simulated() ? g.MessagesPerReplicaStep(c.replicas) : 0;
  // Alike replicas may run once, and a period of them may stand for all (SimulatedReplicas):
  // before the platform exists only one is certain to run then; `running_replicas` >= 0 says how
  // many do.
  const bool all_run = EveryReplicaRuns(c);
  const int timed =
      running_replicas >= 0
          ? running_replicas
          : (all_run ? c.replicas
                     : FewestReplicasRunning(c.replicas, c.experts.active() ? c.experts.ep : 1));
  // All-to-all comms are messages, each costing the solver's time more than one
  // (ExpertAllToAll::MessageEquivalents).
  const std::int64_t comms = ExpertAllToAll::CommsPerReplica(c.experts, *c.program);
  const std::int64_t between = SaturatingAdd(messages, comms);
  const std::int64_t equivalents =
      SaturatingAdd(messages, ExpertAllToAll::MessageEquivalents(c.experts, *c.program, timed));
  SimulationSize size = EstimateSimulationSize(
      SaturatingAdd(static_cast<std::int64_t>(c.program->num_instructions()), between),
      std::int64_t{c.program->p} * g.ActorsPerRank(), c.replicas, c.steps, routes, between, timed,
      equivalents);
  size.lower_bound = running_replicas < 0 && timed < c.replicas;
  return size;
}

// OK without simulated gradient reduction, or with it on a cluster, without analytic all-reduce
// times, one bucket list per rank and every bucket a finite non-negative size.
Status CheckGradientReduction(const SimulationCase& c, std::size_t index) {
  const GradientReduction& g = c.grad_reduction;
  if (!g.simulated()) return Status::Ok();
  if (c.cluster == nullptr || !c.allreduce.empty()) {
    return Status::InvalidArgument(fmt::format(
        "simulation case {}: a {} gradient reduction needs a cluster and no analytic all-reduce "
        "times",
        index, GradReduceName(g.mode)));
  }
  if (static_cast<int>(g.ranks.size()) != c.program->p) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: {} gradient bucket lists for {} ranks", index,
                    g.ranks.size(), c.program->p));
  }
  if (g.ep < 1 || c.replicas % g.ep != 0) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: gradient reduction ep = {}: must divide the {} replicas",
                    index, g.ep, c.replicas));
  }
  for (const RankBuckets& rank : g.ranks) {
    for (const GradientBucket& b : rank.buckets) {
      if (!(b.bytes >= 0 && b.bytes <= kMaxRingBytes)) {
        return Status::InvalidArgument(
            fmt::format("simulation case {}: a gradient bucket of {} bytes: must be in [0, {:g}]",
                        index, b.bytes, kMaxRingBytes));
      }
    }
  }
  return Status::Ok();
}

// Expert parallelism: a cluster, replicas divisible by ep, one entry per stage, none negative.
Status CheckExperts(const SimulationCase& c, std::size_t index) {
  const ExpertParallelism& e = c.experts;
  if (e.ep < 1) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: ep = {}: must be >= 1", index, e.ep));
  }
  if (!e.active()) return Status::Ok();
  if (c.cluster == nullptr || c.replicas % e.ep != 0) {
    return Status::InvalidArgument(fmt::format(
        "simulation case {}: ep = {} needs a cluster and replicas (here {}) divisible by ep{}",
        index, e.ep, c.replicas, c.cluster == nullptr ? " (none given)" : ""));
  }
  const auto stages = static_cast<std::size_t>(c.program->num_stages());
  if (e.stage_bytes.size() != stages || e.stage_layers.size() != stages) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: {} all-to-all byte counts and {} layer counts for {} "
                    "stages",
                    index, e.stage_bytes.size(), e.stage_layers.size(), stages));
  }
  for (std::size_t s = 0; s < stages; ++s) {
    if (e.stage_bytes[s] < 0 || e.stage_layers[s] < 0) {
      return Status::InvalidArgument(
          fmt::format("simulation case {}: stage {}: all-to-all bytes {} and layers {} must be "
                      ">= 0",
                      index, s, e.stage_bytes[s], e.stage_layers[s]));
    }
  }
  return Status::Ok();
}

Status CheckCase(const SimulationCase& c, std::size_t index) {
  if (c.program == nullptr) {
    return Status::InvalidArgument(fmt::format("simulation case {}: no program", index));
  }
  if (static_cast<int>(c.costs.stages.size()) != c.program->num_stages()) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: {} stage costs for a program of {} stages", index,
                    c.costs.stages.size(), c.program->num_stages()));
  }
  if (Status costs = c.costs.Check(c.program->num_stages(), c.program->m); !costs.ok()) {
    return Status::InvalidArgument(fmt::format("simulation case {}: {}", index, costs.message()));
  }
  if (Status links = CheckLinkSlowdowns(c.link_slowdowns, c.program->p, "link slowdown");
      !links.ok()) {
    return Status::InvalidArgument(fmt::format("simulation case {}: {}", index, links.message()));
  }
  if (c.replicas < 1) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: replicas = {}: must be >= 1", index, c.replicas));
  }
  if (c.steps < 1) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: steps = {}: must be >= 1", index, c.steps));
  }
  PIPETTE_RETURN_IF_ERROR(CheckPerRank(c.allreduce, c.program->p, "all-reduce", index));
  PIPETTE_RETURN_IF_ERROR(CheckGradientReduction(c, index));
  PIPETTE_RETURN_IF_ERROR(CheckPerRank(c.optimizer, c.program->p, "optimizer", index));
  for (const auto& [value, what] : {std::pair{c.seconds_per_byte, "seconds per byte"},
                                    {c.instruction_overhead, "instruction overhead"}}) {
    if (!(value >= 0 && value <= kMaxCost)) {
      return Status::InvalidArgument(
          fmt::format("simulation case {}: {} = {}: must be a number in [0, {:g}]", index, what,
                      value, kMaxCost));
    }
  }
  PIPETTE_RETURN_IF_ERROR(CheckStepSlowdown(c, index));
  if (c.cores < 0 || c.cores > kMaxGpusPerNode) {
    return Status::InvalidArgument(fmt::format("simulation case {}: cores = {}: must be in [0, {}]",
                                               index, c.cores, kMaxGpusPerNode));
  }
  if (c.cluster != nullptr) {
    const int gpus = c.cluster->world_size();
    const std::int64_t ranks = static_cast<std::int64_t>(c.program->p) * c.replicas;
    if (static_cast<std::int64_t>(c.gpu_of_rank.size()) != ranks) {
      return Status::InvalidArgument(
          fmt::format("simulation case {}: {} GPU assignments for {} ranks x {} replicas", index,
                      c.gpu_of_rank.size(), c.program->p, c.replicas));
    }
    std::vector<bool> used(gpus, false);
    for (std::int64_t k = 0; k < ranks; ++k) {
      const int g = c.gpu_of_rank[k];
      if (g < 0 || g >= gpus || used[g]) {
        return Status::InvalidArgument(fmt::format(
            "simulation case {}: rank {} of replica {} on GPU {}: cluster '{}' has GPUs 0..{}, "
            "one rank each",
            index, k % c.program->p, k / c.program->p, g, c.cluster->name, gpus - 1));
      }
      used[g] = true;
    }
  }
  if (!(c.latency >= 0 && c.latency <= kMaxCost)) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: latency = {}: must be a number in [0, {:g}]", index,
                    c.latency, kMaxCost));
  }
  PIPETTE_RETURN_IF_ERROR(CheckExperts(c, index));
  const std::int64_t routes =
      c.cluster == nullptr ? 0 : ClusterPlatformRoutes(*c.cluster, c.gpu_of_rank, NeedsMirrors(c));
  return CheckSimulationSize(SizeOf(c, routes), fmt::format("simulation case {}", index));
}

// What one actor writes: its rank's log over every step.
using ActorLogs = std::vector<std::vector<RankLog>>;  // replica, rank

// Where each case runs: its ranks' hosts, rank by rank of replica 0, then replica 1, ..., and the
// shared multicore host its ranks compute on (nullptr: each its own).
struct CaseHosts {
  std::vector<sg4::Host*> ranks;
  sg4::Host* cores = nullptr;
  MirrorHosts mirrors;  // with NeedsMirrors: every rank's
};

// Builds every case's hosts. Ideal-network cases share one star zone: every rank's host hangs off
// its own link, and a route crosses the sender's link and the receiver's, each with half the
// case's latency and a bandwidth of 1 / seconds_per_byte (unbounded without), shared by nobody
// (fatpipe). Cluster cases get their own platform.
std::vector<CaseHosts> BuildHosts(const std::vector<SimulationCase>& cases) {
  auto* root = sg4::create_full_zone("root");
  auto* zone = sg4::create_star_zone("ranks");
  zone->set_parent(root);
  std::vector<CaseHosts> hosts(cases.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const SimulationCase& sc = cases[c];
    if (sc.cores > 0) {
      hosts[c].cores =
          zone->create_host(fmt::format("case{}-cores", c), 1.0)->set_core_count(sc.cores)->seal();
    }
    if (sc.cluster != nullptr) continue;
    const double bandwidth = sc.seconds_per_byte > 0 ? 1.0 / sc.seconds_per_byte : 1e30;
    for (int k = 0; k < sc.program->p * sc.replicas; ++k) {
      auto* host = zone->create_host(fmt::format("case{}-replica{}-rank{}", c, k / sc.program->p,
                                                 k % sc.program->p),
                                     1.0)
                       ->seal();
      auto* link = zone->create_link(host->get_name() + "-link", bandwidth)
                       ->set_latency(sc.latency / 2)
                       ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                       ->seal();
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link)},
                      true);
      hosts[c].ranks.push_back(host);
    }
  }
  zone->seal();
  for (std::size_t c = 0; c < cases.size(); ++c) {
    if (cases[c].cluster == nullptr) continue;
    const SimulationCase& sc = cases[c];
    ClusterPlatform platform = BuildClusterPlatform(*sc.cluster, fmt::format("case{}-", c), root,
                                                    sc.gpu_of_rank, NeedsMirrors(sc));
    hosts[c].ranks = std::move(platform.gpus);
    hosts[c].mirrors = std::move(platform.mirrors);
  }
  root->seal();
  return hosts;
}

// The actor of one pipeline rank: the training loop every engine runs, on SimGrid.
void PipelineRank(const SimulationCase* sc, Channels* channels, int rank, RankWork work,
                  sg4::BarrierPtr replicas, sg4::BarrierPtr step_barrier, RankLog* log) {
  SimGridRuntime runtime(*channels, rank, work, std::move(replicas), std::move(step_barrier));
  StepLoopOptions options;
  options.steps = sc->steps;
  (void)RunSteps(*sc->program, rank, sc->sizes, options, runtime, *log);  // cannot fail here
}

// What rank r of case `sc` computes besides its program.
RankWork WorkOf(const SimulationCase& sc, int r, sg4::Host* cores) {
  RankWork work;
  work.costs = &sc.costs;
  work.instruction_overhead = sc.instruction_overhead;
  work.allreduce_seconds = sc.allreduce.empty() ? 0.0 : sc.allreduce[r];
  work.optimizer_seconds = sc.optimizer.empty() ? 0.0 : sc.optimizer[r];
  work.compute = cores;
  for (const std::vector<double>& step : sc.step_slowdown) work.step_slowdown.push_back(step[r]);
  return work;
}

// What the cases' simulated collectives own: for the gradient reduction one group per pipeline
// rank of a case (its replicas' hosts) and, with experts buckets, ep expert groups per rank (the
// replicas with the same d mod ep), one reducer per rank of every replica; a case's MoE all-to-all.
struct Collectives {
  std::vector<std::unique_ptr<CollectiveGroup>> groups;
  std::vector<std::unique_ptr<RankReducer>> reducers;
  std::vector<std::unique_ptr<ExpertAllToAll>> experts;
};

// The reducers of case `c` (replica d's rank r at d * p + r; empty without simulated reduction),
// with overlap each served by a helper actor on its rank's host. Each writes its events to its
// rank's log.
// `running` replicas run (0 .. running-1: every replica, or the period of ring symmetry, whose
// rings stand for the whole data-parallel groups).
std::vector<RankReducer*> LaunchReducers(const SimulationCase& sc, std::size_t c,
                                         const CaseHosts& hosts, int running, ActorLogs& logs,
                                         Collectives& owned) {
  const GradientReduction& g = sc.grad_reduction;
  const int p = sc.program->p;
  std::vector<RankReducer*> reducers;
  if (!g.simulated()) return reducers;
  const CollectiveAlgorithm algorithm =
      g.mode == GradReduce::kTree ? CollectiveAlgorithm::kTree : CollectiveAlgorithm::kRing;
  const bool all = running == sc.replicas;
  reducers.resize(static_cast<std::size_t>(p) * running);
  for (int r = 0; r < p; ++r) {
    std::vector<sg4::Host*> members;
    for (int d = 0; d < running; ++d) members.push_back(hosts.ranks[d * p + r]);
    owned.groups.push_back(std::make_unique<CollectiveGroup>(
        fmt::format("case{}-dp{}", c, r), std::move(members), algorithm, all ? 0 : sc.replicas));
    const CollectiveGroup* dense = owned.groups.back().get();
    const bool experts = std::any_of(g.ranks[r].buckets.begin(), g.ranks[r].buckets.end(),
                                     [](const GradientBucket& b) { return b.experts; });
    std::vector<const CollectiveGroup*> expert_groups;
    // Fewer running replicas than ep only where ep is every replica (a group of one holder each).
    for (int k = 0; experts && k < std::min(g.ep, running); ++k) {
      std::vector<sg4::Host*> holders;
      for (int d = k; d < running; d += g.ep) holders.push_back(hosts.ranks[d * p + r]);
      owned.groups.push_back(std::make_unique<CollectiveGroup>(
          fmt::format("case{}-dp{}-experts{}", c, r, k), std::move(holders), algorithm,
          all ? 0 : sc.replicas / g.ep));
      expert_groups.push_back(owned.groups.back().get());
    }
    for (int d = 0; d < running; ++d) {
      const GroupMember expert_member =
          experts ? GroupMember{expert_groups[d % g.ep], d / g.ep} : GroupMember{};
      owned.reducers.push_back(std::make_unique<RankReducer>(
          g.ranks[r], GroupMember{dense, d}, expert_member, r, g.overlap, &logs[d][r].allreduces));
      RankReducer* reducer = owned.reducers.back().get();
      reducers[static_cast<std::size_t>(d) * p + r] = reducer;
      if (g.overlap) {
        sg4::Actor::create(fmt::format("case{}-replica{}-rank{}-reduce", c, d, r),
                           hosts.ranks[d * p + r],
                           [reducer, steps = sc.steps] { reducer->Serve(steps); });
      }
    }
  }
  return reducers;
}

// The replicas of case `sc` whose actors run, ascending from 0 (replica_symmetry.h).
std::vector<int> SimulatedReplicas(const SimulationCase& sc, const CaseHosts& hosts) {
  const GradientReduction& g = sc.grad_reduction;
  int running = sc.replicas;
  if (!EveryReplicaRuns(sc) && sc.replicas > 1) {
    if (!g.simulated() && !sc.experts.active()) {
      return DistinctReplicas(*sc.program, hosts.ranks, sc.replicas).simulated;
    }
    // Ring all-reduces and the MoE all-to-all join replicas: a period of them may stand for all.
    ReplicaFlows flows;
    flows.ring = g.simulated();
    if (HasExpertBuckets(g)) flows.expert_stride = g.ep;
    flows.ep = sc.experts.active() ? sc.experts.ep : 1;
    if (!hosts.mirrors.empty()) flows.mirrors = &hosts.mirrors;
    running = ReplicaPeriod(*sc.program, hosts.ranks, sc.replicas, flows);
  }
  std::vector<int> run(running);
  for (int d = 0; d < running; ++d) run[d] = d;
  return run;
}

// Creates the actors of case `c`: one per rank of each replica in `simulated`, one Channels per
// replica (message keys are unique within a replica and step), one barrier per rank (its
// all-reduce starts when every replica reaches it) and, with step_barrier, one over every actor.
// The replicas not simulated are copies of simulated ones: each barrier would release at the same
// time with them.
void LaunchCase(const SimulationCase& sc, std::size_t c, const CaseHosts& hosts,
                const std::vector<int>& simulated, std::vector<std::unique_ptr<Channels>>& channels,
                ActorLogs& logs, Collectives& owned, InstructionCounter* counter) {
  const int p = sc.program->p;
  const int n = static_cast<int>(simulated.size());
  logs.assign(n, std::vector<RankLog>(p));
  // With simulated reduction replicas 0 .. n-1 run (SimulatedReplicas): logs[d] is replica d's.
  const std::vector<RankReducer*> reducers = LaunchReducers(sc, c, hosts, n, logs, owned);
  ExpertAllToAll* alltoall = nullptr;
  if (sc.experts.active()) {
    owned.experts.push_back(std::make_unique<ExpertAllToAll>(
        sc.experts, hosts.ranks, p, n, hosts.mirrors.empty() ? nullptr : &hosts.mirrors));
    alltoall = owned.experts.back().get();
  }
  std::vector<sg4::BarrierPtr> barriers(p);
  if (!sc.allreduce.empty()) {
    for (int r = 0; r < p; ++r) barriers[r] = sg4::Barrier::create(n);
  }
  const sg4::BarrierPtr step_barrier = sc.step_barrier ? sg4::Barrier::create(p * n) : nullptr;
  for (int i = 0; i < n; ++i) {
    const int d = simulated[i];
    const auto first = hosts.ranks.begin() + static_cast<std::ptrdiff_t>(d) * p;
    channels.push_back(
        std::make_unique<Channels>(std::vector<sg4::Host*>(first, first + p),
                                   sc.cluster != nullptr || sc.seconds_per_byte > 0));
    channels.back()->SlowLinks(sc.link_slowdowns);
    for (int r = 0; r < p; ++r) {
      RankWork work = WorkOf(sc, r, hosts.cores);
      if (!reducers.empty()) work.reducer = reducers[static_cast<std::size_t>(d) * p + r];
      work.experts = alltoall;
      work.replica = d;
      work.counter = counter;
      sg4::Actor::create(fmt::format("case{}-replica{}-rank{}", c, d, r), first[r], PipelineRank,
                         &sc, channels.back().get(), r, work, barriers[r], step_barrier,
                         &logs[i][r]);
    }
  }
}

// The result of one case from its actors' logs.
SimulationResult Collect(const SimulationCase& sc, ActorLogs& logs) {
  SimulationResult result;
  const int p = sc.program->p;
  result.step_end.assign(sc.steps, 0.0);
  for (const auto& replica : logs) {
    for (const RankLog& log : replica) {
      for (int s = 0; s < sc.steps; ++s) {
        result.step_end[s] = std::max(result.step_end[s], log.steps[s].end);
      }
    }
  }
  result.makespan = result.step_end.back();
  result.busy.assign(p, 0.0);
  double total_busy = 0;
  for (int r = 0; r < p; ++r) {
    RankLog& log = logs.front()[r];
    for (const TraceEvent& e : log.trace) {
      if (e.step != 0) break;
      result.pipeline_makespan = std::max(result.pipeline_makespan, e.end);
      if (IsCompute(e.action.kind)) result.busy[r] += sc.costs.Of(e.action);
    }
    total_busy += result.busy[r];
    result.trace.insert(result.trace.end(), log.trace.begin(), log.trace.end());
    result.collectives.insert(result.collectives.end(), log.allreduces.begin(),
                              log.allreduces.end());
    result.updates.insert(result.updates.end(), log.updates.begin(), log.updates.end());
  }
  result.step_spans.resize(sc.steps);
  for (int s = 0; s < sc.steps; ++s) {
    Span& span = result.step_spans[s];
    span = logs.front().front().steps[s];
    for (const RankLog& log : logs.front()) {
      span.start = std::min(span.start, log.steps[s].start);
      span.end = std::max(span.end, log.steps[s].end);
    }
  }
  result.bubble_ratio =
      result.pipeline_makespan > 0 ? 1.0 - total_busy / (p * result.pipeline_makespan) : 0.0;
  return result;
}

SimulationProgress& Progress() {
  static SimulationProgress progress;
  return progress;
}

// The counter of the cases' instructions (every simulated replica, every step) for Progress();
// nullptr when no progress is wanted.
std::unique_ptr<InstructionCounter> MakeCounter(const std::vector<SimulationCase>& cases,
                                                const std::vector<std::vector<int>>& simulated) {
  if (!Progress().report) return nullptr;
  auto counter = std::make_unique<InstructionCounter>();
  for (std::size_t c = 0; c < cases.size(); ++c) {
    counter->total += static_cast<std::int64_t>(cases[c].program->num_instructions()) *
                      cases[c].steps * static_cast<std::int64_t>(simulated[c].size());
  }
  counter->every = std::max<std::int64_t>(1, Progress().every);
  counter->next = counter->every;
  counter->report = Progress().report;
  return counter;
}

}  // namespace

void SetSimulationProgress(SimulationProgress progress) { Progress() = std::move(progress); }

Result<std::vector<SimulationResult>> Simulate(const std::vector<SimulationCase>& cases) {
  static bool used = false;
  if (used) {
    return Status::FailedPrecondition(
        "Simulate() runs once per process (SimGrid 3.32 has one engine per process): pass every "
        "case to one call");
  }
  for (std::size_t c = 0; c < cases.size(); ++c) PIPETTE_RETURN_IF_ERROR(CheckCase(cases[c], c));
  used = true;

  const std::unique_ptr<sg4::Engine> engine = MakeEngine();
  const std::vector<CaseHosts> hosts = BuildHosts(cases);
  std::vector<ActorLogs> logs(cases.size());
  std::vector<std::unique_ptr<Channels>> channels;
  Collectives collectives;
  std::vector<std::vector<int>> simulated(cases.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    simulated[c] = SimulatedReplicas(cases[c], hosts[c]);
    // Which alike replicas run once is known only now: the time of those that run, checked again
    // before any runs (CheckCase could count only one of them).
    const SimulationCase& sc = cases[c];
    const std::int64_t routes =
        sc.cluster == nullptr
            ? 0
            : ClusterPlatformRoutes(*sc.cluster, sc.gpu_of_rank, NeedsMirrors(sc));
    PIPETTE_RETURN_IF_ERROR(
        CheckSimulationSize(SizeOf(sc, routes, static_cast<int>(simulated[c].size())),
                            fmt::format("simulation case {}", c)));
  }
  const std::unique_ptr<InstructionCounter> counter = MakeCounter(cases, simulated);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    LaunchCase(cases[c], c, hosts[c], simulated[c], channels, logs[c], collectives, counter.get());
  }
  engine->run();
  if (Progress().finished) Progress().finished();

  std::vector<SimulationResult> results;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    results.push_back(Collect(cases[c], logs[c]));
    results.back().simulated_replicas = static_cast<int>(logs[c].size());
  }
  return results;
}

}  // namespace pipette
