#include "sim/expert_alltoall.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <simgrid/s4u.hpp>
#include <utility>

namespace pipette {

namespace sg4 = simgrid::s4u;

namespace {

// Whether `half` (an F, I, B or W) runs all-to-all phases on an MoE stage.
bool HasPhases(const ExpertParallelism& spec, const Action& half) {
  return half.kind != ActionKind::kWeightBackward && spec.stage_layers[half.stage] > 0 &&
         spec.stage_bytes[half.stage] > 0;
}

}  // namespace

ExpertAllToAll::ExpertAllToAll(const ExpertParallelism& spec, std::vector<sg4::Host*> hosts, int p,
                               int running, const MirrorHosts* mirrors)
    : spec_(spec),
      hosts_(std::move(hosts)),
      p_(p),
      replicas_(static_cast<int>(hosts_.size()) / p),
      running_(running > 0 ? running : replicas_),
      mirrors_(mirrors),
      mutex_(sg4::Mutex::create()),
      in_flight_(hosts_.size()),
      max_latency_(hosts_.size(), -1.0) {
  for (std::size_t k = 0; k < hosts_.size(); ++k) {
    arrived_.push_back(sg4::ConditionVariable::create());
  }
}

std::int64_t ExpertAllToAll::CommsPerReplica(const ExpertParallelism& spec,
                                             const Program& program) {
  if (!spec.active()) return 0;
  std::int64_t phases = 0;
  for (const RankProgram& rank : program.ranks) {
    for (const Instruction& ins : rank.instructions) {
      const Action& a = ins.action;
      if (!IsCompute(a.kind)) continue;
      if (a.kind == ActionKind::kOverlapped) {
        phases += 2 * HasPhases(spec, a.forward_half()) + 2 * HasPhases(spec, a.backward_half());
      } else {
        phases += 2 * HasPhases(spec, a);
      }
    }
  }
  return phases * (spec.ep - 1);
}

std::int64_t ExpertAllToAll::MessageEquivalents(const ExpertParallelism& spec,
                                                const Program& program, int running) {
  const std::int64_t comms = CommsPerReplica(spec, program);
  const std::int64_t ep = spec.ep;
  const bool folded = running > 0 && running < spec.ep;  // a period with mirrors
  const std::int64_t weight = std::max<std::int64_t>(1, ep * ep / (folded ? 128 : 32));
  std::int64_t total = 0;
  if (__builtin_mul_overflow(comms, weight, &total))
    return std::numeric_limits<std::int64_t>::max();
  return total;
}

void ExpertAllToAll::Run(const Action& a, const Costs& costs, int step, int replica, int rank,
                         sg4::Host* compute) {
  sg4::Host* host = compute != nullptr ? compute : HostOf(replica, rank);
  auto work = [&](double seconds) {
    if (seconds > 0) sg4::this_actor::exec_init(seconds)->set_host(host)->wait();
  };
  if (a.kind != ActionKind::kOverlapped) {
    work(costs.Compute(a));
    Phases(a, step, replica, rank);
    return;
  }
  if (!costs.overlap_alltoall) {
    work(costs.Compute(a.forward_half()));
    Phases(a.forward_half(), step, replica, rank);
    work(costs.Compute(a.backward_half()));
    Phases(a.backward_half(), step, replica, rank);
    return;
  }
  // Both halves' compute while both halves' phases run, one after the other.
  sg4::ExecPtr exec;
  if (const double seconds = costs.Compute(a); seconds > 0) {
    exec = sg4::this_actor::exec_init(seconds)->set_host(host);
    exec->start();
  }
  Phases(a.forward_half(), step, replica, rank);
  Phases(a.backward_half(), step, replica, rank);
  if (exec) exec->wait();
}

void ExpertAllToAll::Phases(const Action& half, int step, int replica, int rank) {
  if (!HasPhases(spec_, half)) return;
  const int first = half.kind == ActionKind::kForward ? 0 : 2;
  Phase(half, first, step, replica, rank);
  Phase(half, first + 1, step, replica, rank);
}

void ExpertAllToAll::Phase(const Action& half, int phase, int step, int replica, int rank) {
  const int ep = spec_.ep;
  const int group = replica / ep * ep;
  const int self = replica * p_ + rank;
  if (max_latency_[self] < 0) {  // the slowest route to a peer, once per rank
    double slowest = 0;
    for (int d = group; d < group + ep; ++d) {
      if (d == replica) continue;
      std::vector<sg4::Link*> links;
      double latency = 0;
      HostOf(replica, rank)->route_to(HostOf(d, rank), links, &latency);
      slowest = std::max(slowest, latency);
    }
    max_latency_[self] = slowest;
  }
  const int layers = spec_.stage_layers[half.stage];
  if (layers > 1) sg4::this_actor::sleep_for((layers - 1) * max_latency_[self]);

  const double bytes = static_cast<double>(spec_.stage_bytes[half.stage]) / ep;
  for (int d = group; d < group + ep; ++d) {
    if (d == replica) continue;
    // Replica d's copy that runs, and the sender whose message into it this one stands for.
    const int copy = d % running_;
    const int sender = ((replica - (d - copy)) % replicas_ + replicas_) % replicas_;
    sg4::Host* to = copy != replica ? HostOf(copy, rank)
                                    : mirrors_->Of(static_cast<std::size_t>(self),
                                                   static_cast<std::size_t>(d) * p_ + rank);
    sg4::CommPtr comm = sg4::Comm::sendto_init(HostOf(replica, rank), to)
                            ->set_payload_size(static_cast<std::uint64_t>(bytes));
    comm->start();
    const int receiver = copy * p_ + rank;
    std::unique_lock lock(*mutex_);
    in_flight_[receiver][Key{step, half.stage, half.microbatch, phase, sender}] = comm;
    arrived_[receiver]->notify_all();
  }
  // The phase ends when the peers' messages have arrived (the receiver waits on each comm; a
  // comm has one waiter: the symmetric traffic ends this rank's own sends at the same time).
  for (int d = group; d < group + ep; ++d) {
    if (d == replica) continue;
    const Key key{step, half.stage, half.microbatch, phase, d};
    std::unique_lock lock(*mutex_);
    auto it = in_flight_[self].find(key);
    while (it == in_flight_[self].end()) {
      arrived_[self]->wait(lock);
      it = in_flight_[self].find(key);
    }
    sg4::CommPtr comm = it->second;
    in_flight_[self].erase(it);
    lock.unlock();
    comm->wait();
  }
}

}  // namespace pipette
