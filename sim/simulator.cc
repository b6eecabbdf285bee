#include "sim/simulator.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>

#include "sim/cluster_platform.h"
#include "sim/sim_engine.h"

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

// Messages of one case in flight: the sender starts a host-to-host comm and registers it under
// the message's key (receiving stage, microbatch, direction: unique within a case); the receiver
// waits for the registration, then for the comm. SimGrid computes the transfer, so the data lands
// at the send time plus the route's latency whenever the receiver looks. (Eager mailboxes with a
// permanent receiver do not work for this in 3.32: a get posted while the put is in flight
// completes at once.)
struct Channels {
  std::map<std::pair<int, std::int64_t>, sg4::CommPtr> in_flight;  // (step, message key)
  sg4::MutexPtr mutex = sg4::Mutex::create();
  std::vector<sg4::ConditionVariablePtr> arrived;  // one per receiving rank
  std::vector<sg4::Host*> hosts;                   // one per rank
  bool real_sizes = false;                         // messages carry their bytes (cluster)
};

std::int64_t MessageKey(const Action& a) {
  const bool gradient = a.kind == ActionKind::kSendBackward || a.kind == ActionKind::kRecvBackward;
  // A SEND names the producing stage, a RECV the consuming one.
  int stage = a.stage;
  if (a.kind == ActionKind::kSendForward) stage = a.stage + 1;
  if (a.kind == ActionKind::kSendBackward) stage = a.stage - 1;
  return (static_cast<std::int64_t>(stage) << 33) | (static_cast<std::int64_t>(a.microbatch) << 1) |
         (gradient ? 1 : 0);
}

// RankRuntime on a SimGrid actor: compute is an execution on a host of speed 1 flop/s (so flops
// are seconds); messages are host-to-host comms handed over through Channels.
class SimGridRuntime final : public RankRuntime {
 public:
  SimGridRuntime(Channels& channels, int rank) : channels_(channels), rank_(rank) {}

  // The training step whose messages the rank sends and receives.
  void set_step(int step) { step_ = step; }

  double Now() override { return sg4::Engine::get_clock(); }

  void Compute(const Instruction&, double seconds) override {
    if (seconds > 0) sg4::this_actor::execute(seconds);
  }

  void Send(const Instruction& ins, std::int64_t bytes) override {
    // The ideal network carries 0 bytes: only the route's latency counts.
    sg4::CommPtr comm = sg4::Comm::sendto_init(channels_.hosts[rank_], channels_.hosts[ins.peer])
                            ->set_payload_size(channels_.real_sizes ? bytes : 0);
    comm->start();
    std::unique_lock lock(*channels_.mutex);
    channels_.in_flight[{step_, MessageKey(ins.action)}] = comm;
    channels_.arrived[ins.peer]->notify_all();
  }

  void PostRecv(const Instruction&, std::int64_t) override {}

  double WaitRecv(const Instruction& ins) override {
    const std::pair<int, std::int64_t> key{step_, MessageKey(ins.action)};
    std::unique_lock lock(*channels_.mutex);
    auto it = channels_.in_flight.find(key);
    while (it == channels_.in_flight.end()) {
      channels_.arrived[rank_]->wait(lock);
      it = channels_.in_flight.find(key);
    }
    sg4::CommPtr comm = it->second;
    channels_.in_flight.erase(it);
    lock.unlock();
    comm->wait();
    return comm->get_finish_time();
  }

 private:
  Channels& channels_;
  int rank_;
  int step_ = 0;
};

Status CheckCase(const SimulationCase& c, std::size_t index) {
  if (c.program == nullptr) {
    return Status::InvalidArgument(fmt::format("simulation case {}: no program", index));
  }
  if (static_cast<int>(c.costs.stages.size()) != c.program->num_stages()) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: {} stage costs for a program of {} stages", index,
                    c.costs.stages.size(), c.program->num_stages()));
  }
  if (c.replicas < 1 || (c.cluster == nullptr && c.replicas != 1)) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: replicas = {}: must be >= 1, and 1 on the ideal network",
                    index, c.replicas));
  }
  if (c.steps < 1) {
    return Status::InvalidArgument(
        fmt::format("simulation case {}: steps = {}: must be >= 1", index, c.steps));
  }
  if (!c.allreduce.empty()) {
    if (static_cast<int>(c.allreduce.size()) != c.program->p) {
      return Status::InvalidArgument(
          fmt::format("simulation case {}: {} all-reduce times for {} ranks", index,
                      c.allreduce.size(), c.program->p));
    }
    for (double t : c.allreduce) {
      if (!(t >= 0 && t <= kMaxCost)) {
        return Status::InvalidArgument(
            fmt::format("simulation case {}: all-reduce time {}: must be a number in [0, {:g}]",
                        index, t, kMaxCost));
      }
    }
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
  return Status::Ok();
}

}  // namespace

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

  // Ideal-network cases share one star zone: every rank's host hangs off its own link; a route
  // crosses the sender's link and the receiver's, each with half the case's latency. Cluster
  // cases get their own platform.
  auto* root = sg4::create_full_zone("root");
  auto* zone = sg4::create_star_zone("ranks");
  zone->set_parent(root);
  std::vector<std::vector<sg4::Host*>> hosts(cases.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    if (cases[c].cluster != nullptr) continue;
    for (int r = 0; r < cases[c].program->p; ++r) {
      auto* host = zone->create_host(fmt::format("case{}-rank{}", c, r), 1.0)->seal();
      auto* link = zone->create_link(host->get_name() + "-link", 1e30)
                       ->set_latency(cases[c].latency / 2)
                       ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                       ->seal();
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link)},
                      true);
      hosts[c].push_back(host);
    }
  }
  zone->seal();
  for (std::size_t c = 0; c < cases.size(); ++c) {
    if (cases[c].cluster == nullptr) continue;
    const ClusterPlatform platform =
        BuildClusterPlatform(*cases[c].cluster, fmt::format("case{}-", c), root);
    for (int g : cases[c].gpu_of_rank) hosts[c].push_back(platform.gpus[g]);
  }
  root->seal();

  // One Channels per replica of each case: message keys are unique within a replica and step.
  // One barrier per rank of a case: the rank's all-reduce starts when every replica reaches it.
  // Each actor writes its own trace and all-reduce events and its end of each step.
  struct ActorLog {
    std::vector<TraceEvent> trace;
    std::vector<AllReduceEvent> collectives;
    std::vector<double> step_end;
  };
  std::vector<std::vector<std::vector<ActorLog>>> logs(cases.size());  // case, replica, rank
  std::vector<std::unique_ptr<Channels>> channels;
  std::vector<std::vector<sg4::BarrierPtr>> barriers(cases.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const SimulationCase& sc = cases[c];
    const int p = sc.program->p;
    logs[c].assign(sc.replicas, std::vector<ActorLog>(p));
    if (!sc.allreduce.empty()) {
      for (int r = 0; r < p; ++r) barriers[c].push_back(sg4::Barrier::create(sc.replicas));
    }
    for (int d = 0; d < sc.replicas; ++d) {
      channels.push_back(std::make_unique<Channels>());
      Channels& ch = *channels.back();
      ch.hosts.assign(hosts[c].begin() + static_cast<std::ptrdiff_t>(d) * p,
                      hosts[c].begin() + static_cast<std::ptrdiff_t>(d + 1) * p);
      ch.real_sizes = sc.cluster != nullptr;
      for (int r = 0; r < p; ++r) ch.arrived.push_back(sg4::ConditionVariable::create());
      for (int r = 0; r < p; ++r) {
        ActorLog& log = logs[c][d][r];
        sg4::BarrierPtr barrier = sc.allreduce.empty() ? nullptr : barriers[c][r];
        sg4::Actor::create(fmt::format("case{}-replica{}-rank{}", c, d, r), ch.hosts[r],
                           [&sc, &log, &ch, barrier, r] {
                             SimGridRuntime runtime(ch, r);
                             for (int step = 0; step < sc.steps; ++step) {
                               runtime.set_step(step);
                               const std::size_t first = log.trace.size();
                               RunRank(*sc.program, r, sc.costs, sc.sizes, runtime, log.trace);
                               for (std::size_t k = first; k < log.trace.size(); ++k)
                                 log.trace[k].step = step;
                               if (barrier) {
                                 barrier->wait();
                                 const double start = runtime.Now();
                                 if (sc.allreduce[r] > 0)
                                   sg4::this_actor::sleep_for(sc.allreduce[r]);
                                 log.collectives.push_back({r, step, start, runtime.Now(), 0});
                               }
                               double end = 0;
                               for (std::size_t k = first; k < log.trace.size(); ++k) {
                                 end = std::max(end, log.trace[k].end);
                               }
                               if (!log.collectives.empty())
                                 end = std::max(end, log.collectives.back().end);
                               log.step_end.push_back(end);
                             }
                           });
      }
    }
  }
  engine->run();

  std::vector<SimulationResult> results(cases.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    SimulationResult& result = results[c];
    const SimulationCase& sc = cases[c];
    const int p = sc.program->p;
    result.step_end.assign(sc.steps, 0.0);
    for (const auto& replica : logs[c]) {
      for (const ActorLog& log : replica) {
        for (int s = 0; s < sc.steps; ++s) {
          result.step_end[s] = std::max(result.step_end[s], log.step_end[s]);
        }
      }
    }
    result.makespan = result.step_end.back();
    result.busy.assign(p, 0.0);
    double total_busy = 0;
    for (int r = 0; r < p; ++r) {
      ActorLog& log = logs[c].front()[r];
      for (const TraceEvent& e : log.trace) {
        if (e.step != 0) break;
        result.pipeline_makespan = std::max(result.pipeline_makespan, e.end);
        if (IsCompute(e.action.kind)) result.busy[r] += sc.costs.Of(e.action);
      }
      total_busy += result.busy[r];
      result.trace.insert(result.trace.end(), log.trace.begin(), log.trace.end());
      result.collectives.insert(result.collectives.end(), log.collectives.begin(),
                                log.collectives.end());
    }
    result.bubble_ratio =
        result.pipeline_makespan > 0 ? 1.0 - total_busy / (p * result.pipeline_makespan) : 0.0;
  }
  return results;
}

}  // namespace pipette
