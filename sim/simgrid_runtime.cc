#include "sim/simgrid_runtime.h"

#include <simgrid/s4u.hpp>

#include "pipette/schedule/message.h"

namespace pipette {

namespace sg4 = simgrid::s4u;

Channels::Channels(std::vector<sg4::Host*> rank_hosts, bool carry_bytes)
    : mutex(sg4::Mutex::create()), hosts(std::move(rank_hosts)), real_sizes(carry_bytes) {
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    arrived.push_back(sg4::ConditionVariable::create());
  }
}

SimGridRuntime::SimGridRuntime(Channels& channels, int rank, const Costs& costs,
                               sg4::BarrierPtr replicas, double allreduce_seconds)
    : channels_(channels),
      rank_(rank),
      costs_(costs),
      replicas_(std::move(replicas)),
      allreduce_seconds_(allreduce_seconds) {}

double SimGridRuntime::Now() { return sg4::Engine::get_clock(); }

void SimGridRuntime::Compute(const Instruction& ins) {
  const double seconds = costs_.Of(ins.action);
  if (seconds > 0) sg4::this_actor::execute(seconds);
}

void SimGridRuntime::Send(const Instruction& ins, std::int64_t bytes) {
  // The ideal network carries 0 bytes: only the route's latency counts.
  sg4::CommPtr comm = sg4::Comm::sendto_init(channels_.hosts[rank_], channels_.hosts[ins.peer])
                          ->set_payload_size(channels_.real_sizes ? bytes : 0);
  comm->start();
  std::unique_lock lock(*channels_.mutex);
  channels_.in_flight[{step_, MessageOf(ins.action).key()}] = comm;
  channels_.arrived[ins.peer]->notify_all();
}

double SimGridRuntime::WaitRecv(const Instruction& ins) {
  const std::pair<int, std::int64_t> key{step_, MessageOf(ins.action).key()};
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

Status SimGridRuntime::BeginStep(int step) {
  step_ = step;
  return Status::Ok();
}

std::optional<Span> SimGridRuntime::ReduceGradients(int) {
  if (!replicas_) return std::nullopt;
  replicas_->wait();  // every replica's rank has finished its program
  const double start = Now();
  if (allreduce_seconds_ > 0) sg4::this_actor::sleep_for(allreduce_seconds_);
  return Span{start, Now()};
}

}  // namespace pipette
