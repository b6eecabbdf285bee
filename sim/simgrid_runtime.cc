#include "sim/simgrid_runtime.h"

#include <cmath>
#include <simgrid/s4u.hpp>

#include "pipette/schedule/message.h"
#include "sim/gradient_reduction.h"

namespace pipette {

namespace sg4 = simgrid::s4u;

Channels::Channels(std::vector<sg4::Host*> rank_hosts, bool carry_bytes)
    : waiting(rank_hosts.size()), hosts(std::move(rank_hosts)), real_sizes(carry_bytes) {}

void Channels::SlowLinks(const std::vector<LinkSlowdown>& slowdowns) {
  for (const LinkSlowdown& l : slowdowns) {
    for (const auto& [from, to] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}}) {
      std::vector<sg4::Link*> links;
      double latency = 0;
      hosts[from]->route_to(hosts[to], links, &latency);
      SlowLink& slow = slow_links[{from, to}];
      slow.factor *= l.factor;
      slow.delay = (slow.factor - 1.0) * latency;
    }
  }
}

void Channels::Post(Key key, sg4::CommPtr comm, int receiver) {
  comm->start();
  in_flight.emplace(key, std::move(comm));
  Waiting& w = waiting[receiver];
  if (w.actor != nullptr && w.key == key) {
    sg4::Actor* actor = w.actor;
    w.actor = nullptr;
    actor->resume();
  }
}

double Channels::Receive(Key key, int receiver) {
  auto it = in_flight.find(key);
  while (it == in_flight.end()) {
    waiting[receiver] = {key, sg4::Actor::self()};
    sg4::this_actor::suspend();
    it = in_flight.find(key);
  }
  const sg4::CommPtr comm = std::move(it->second);
  in_flight.erase(it);
  // A finished comm has its finish time (SimGrid sets it before it finishes the comm): waiting on
  // it would only scan SimGrid's list of comms once more.
  if (comm->get_finish_time() < 0) comm->wait();
  return comm->get_finish_time();
}

SimGridRuntime::SimGridRuntime(Channels& channels, int rank, const RankWork& work,
                               sg4::BarrierPtr replicas, sg4::BarrierPtr step_barrier)
    : channels_(channels),
      rank_(rank),
      work_(work),
      replicas_(std::move(replicas)),
      step_barrier_(std::move(step_barrier)) {}

double SimGridRuntime::Now() { return sg4::Engine::get_clock(); }

void SimGridRuntime::Work(double seconds) {
  if (!(seconds > 0)) return;
  if (work_.compute == nullptr) {
    // The rank's own host runs nothing else, so its compute is a sleep: the same end time as an
    // execution on a host of 1 flop/s, one simcall instead of two and no execution activity.
    sg4::this_actor::sleep_for(seconds);
  } else {
    sg4::this_actor::exec_init(seconds)->set_host(work_.compute)->wait();
  }
}

void InstructionCounter::Count() {
  if (++executed < next) return;
  next = executed + every;
  report(executed, total, sg4::Engine::get_clock());
}

void SimGridRuntime::Dispatch(const Instruction&) {
  if (work_.counter != nullptr) work_.counter->Count();
  Work(work_.instruction_overhead);
}

void SimGridRuntime::Compute(const Instruction& ins) {
  if (work_.experts != nullptr) {
    work_.experts->Run(ins.action, *work_.costs, step_, work_.replica, rank_, work_.compute);
  } else {
    const std::vector<double>& slow = work_.step_slowdown;
    Work(work_.costs->Of(ins.action) *
         (slow.empty() ? 1.0 : slow[static_cast<std::size_t>(step_) % slow.size()]));
  }
  if (work_.reducer != nullptr) work_.reducer->Computed(ins.action, step_);
}

void SimGridRuntime::Send(const Instruction& ins, std::int64_t bytes) {
  double factor = 1.0, delay = 0.0;
  if (!channels_.slow_links.empty()) {
    if (const auto it = channels_.slow_links.find({rank_, ins.peer});
        it != channels_.slow_links.end()) {
      factor = it->second.factor;
      delay = it->second.delay;
    }
  }
  // The ideal network carries 0 bytes: only the route's latency counts.
  const auto payload =
      channels_.real_sizes ? static_cast<std::uint64_t>(std::llround(bytes * factor)) : 0;
  sg4::CommPtr comm = sg4::Comm::sendto_init(channels_.hosts[rank_], channels_.hosts[ins.peer])
                          ->set_payload_size(payload);
  const Channels::Key key{step_, MessageOf(ins.action).key()};
  if (delay > 0) {  // a slowed link: a relay on the sender's host starts the comm later
    Channels* channels = &channels_;
    const int peer = ins.peer;
    sg4::Actor::create("slow-link", channels_.hosts[rank_], [channels, key, comm, peer, delay] {
      sg4::this_actor::sleep_for(delay);
      channels->Post(key, comm, peer);
    });
    return;
  }
  channels_.Post(key, comm, ins.peer);
}

double SimGridRuntime::WaitRecv(const Instruction& ins) {
  return channels_.Receive({step_, MessageOf(ins.action).key()}, rank_);
}

Status SimGridRuntime::BeginStep(int step) {
  if (step_barrier_) step_barrier_->wait();
  step_ = step;
  return Status::Ok();
}

Status SimGridRuntime::UpdateParameters(int) {
  Work(work_.optimizer_seconds);
  return Status::Ok();
}

std::optional<Span> SimGridRuntime::ReduceGradients(int step) {
  if (work_.reducer != nullptr) {
    work_.reducer->Finish(step);
    return std::nullopt;
  }
  if (!replicas_) return std::nullopt;
  replicas_->wait();  // every replica's rank has finished its program
  const double start = Now();
  if (work_.allreduce_seconds > 0) sg4::this_actor::sleep_for(work_.allreduce_seconds);
  return Span{start, Now()};
}

}  // namespace pipette
