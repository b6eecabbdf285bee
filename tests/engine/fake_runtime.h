// FakeRuntime: a RankRuntime on a virtual clock, for testing the shared loops (RunRank, RunSteps)
// without SimGrid, MPI or a GPU, the way leveldb tests against an in-memory Env.
//
// Each rank runs on its own thread with its own clock. A compute advances the clock by the cost
// model's time; a send posts its message on a FakeNetwork, where it arrives `latency` after the
// send; a wait blocks the thread until the message is posted and moves the clock to its arrival
// if that is later. Threads only meet through the network's messages, so every time is a pure
// function of the program, the costs and the latency, whatever order the OS runs the threads in.
// The network is shared by the ranks of one run (thread-safe); a runtime is used by its thread.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pipette/engine/rank_runtime.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/message.h"

namespace pipette::testing {

class FakeNetwork {
 public:
  explicit FakeNetwork(double latency) : latency_(latency) {}

  // Posts message `key` of `step`, sent at time `sent`.
  void Post(int step, std::int64_t key, double sent) {
    std::lock_guard lock(mutex_);
    arrivals_[{step, key}] = sent + latency_;
    posted_.notify_all();
  }
  // Blocks until message `key` of `step` is posted; returns its arrival time.
  double Await(int step, std::int64_t key) {
    std::unique_lock lock(mutex_);
    posted_.wait(lock, [&] { return arrivals_.contains({step, key}); });
    return arrivals_.at({step, key});
  }

 private:
  const double latency_;
  std::mutex mutex_;
  std::condition_variable posted_;
  std::map<std::pair<int, std::int64_t>, double> arrivals_;
};

class FakeRuntime : public RankRuntime {
 public:
  FakeRuntime(FakeNetwork& network, const Costs& costs) : network_(network), costs_(costs) {}

  double Now() override { return clock_; }
  void Compute(const Instruction& ins) override { clock_ += costs_.Of(ins.action); }
  void Send(const Instruction& ins, std::int64_t) override {
    network_.Post(step_, MessageOf(ins.action).key(), clock_);
  }
  void PostRecv(const Instruction&, std::int64_t) override {}
  double WaitRecv(const Instruction& ins) override {
    const double arrival = network_.Await(step_, MessageOf(ins.action).key());
    clock_ = std::max(clock_, arrival);
    return arrival;
  }
  Status BeginStep(int step) override {
    step_ = step;
    return Status::Ok();
  }

 protected:
  double clock_ = 0;
  int step_ = 0;

 private:
  FakeNetwork& network_;
  const Costs& costs_;
};

}  // namespace pipette::testing
