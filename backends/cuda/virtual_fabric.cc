#include "virtual_fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "check.h"
#include "kernels.h"

namespace pipette::cuda {

VirtualHub::~VirtualHub() {
  // Messages never received (a failed run): their senders' streams may be gone, so they are freed
  // in the default stream's order once the device is idle.
  if (!mail_.empty()) (void)cudaDeviceSynchronize();
  for (auto& [key, item] : mail_) {
    item.first.set_stream(nullptr);
    (void)cudaEventDestroy(item.second);
  }
}

void VirtualHub::Fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = why;
  }
  cv_.notify_all();
}

bool VirtualHub::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !failure_.empty();
}

void VirtualHub::WaitUntil(std::unique_lock<std::mutex>& lock, const std::function<bool()>& done,
                           const std::string& what) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  while (!done()) {
    if (!failure_.empty()) {
      throw PeerTimeout(fmt::format("gave up waiting for {}: {}", what, failure_));
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !done()) {
      failure_ =
          fmt::format("a rank waited more than --peer-timeout {} s for {}", timeout_s_, what);
      cv_.notify_all();
      throw PeerTimeout(failure_);
    }
  }
}

void VirtualHub::Post(int to, int from, std::int64_t slot, DeviceTensor tensor, cudaEvent_t ready) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    mail_[{to, from, slot}] = {std::move(tensor), ready};
  }
  cv_.notify_all();
}

std::pair<DeviceTensor, cudaEvent_t> VirtualHub::Take(int to, int from, std::int64_t slot,
                                                      const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto key = std::make_tuple(to, from, slot);
  WaitUntil(
      lock, [&] { return mail_.count(key) > 0; }, what);
  auto it = mail_.find(key);
  std::pair<DeviceTensor, cudaEvent_t> item = std::move(it->second);
  mail_.erase(it);
  return item;
}

void VirtualHub::Meet(const std::string& key, int participants, const std::function<void()>& arrive,
                      const std::function<void()>& last, const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!failure_.empty()) throw PeerTimeout(fmt::format("gave up on {}: {}", what, failure_));
  const long generation = generation_[key];
  arrive();
  if (++arrived_[key] == participants) {
    last();
    arrived_[key] = 0;
    ++generation_[key];
    cv_.notify_all();
    return;
  }
  WaitUntil(
      lock, [&] { return generation_[key] != generation; }, what);
}

// ---- VirtualFabric ----

void VirtualFabric::Send(int peer, std::int64_t slot, DeviceTensor tensor, RankDevice& dev) {
  cudaEvent_t ready = nullptr;
  PIPETTE_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  PIPETTE_CUDA_CHECK(cudaEventRecord(ready, dev.stream()));
  tensor.set_meter(nullptr);  // the receiver frees it; it leaves this rank's count now
  hub_.Post(peer, rank_, slot, std::move(tensor), ready);
}

VirtualFabric::VirtualFabric(VirtualHub& hub, int rank) : hub_(hub), rank_(rank) {
  PIPETTE_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
}

VirtualFabric::~VirtualFabric() {
  (void)cudaStreamSynchronize(copy_);
  for (auto& [key, posted] : posted_) (void)cudaEventDestroy(posted.allocated);
  (void)cudaStreamDestroy(copy_);
}

void VirtualFabric::PostRecv(int peer, std::int64_t slot, DeviceTensor buffer, RankDevice& dev) {
  Posted posted{std::move(buffer), nullptr};
  PIPETTE_CUDA_CHECK(cudaEventCreateWithFlags(&posted.allocated, cudaEventDisableTiming));
  PIPETTE_CUDA_CHECK(cudaEventRecord(posted.allocated, dev.stream()));
  posted_[{peer, slot}] = std::move(posted);
}

// The copy runs on the copy stream as soon as the sender's data and the buffer exist, beside
// whatever the rank computes meanwhile; the rank's stream waits for it before the consumer.
DeviceTensor VirtualFabric::WaitRecv(int peer, std::int64_t slot, RankDevice& dev,
                                     const std::string& what) {
  auto it = posted_.find({peer, slot});
  Posted posted = std::move(it->second);
  posted_.erase(it);
  auto [source, ready] = hub_.Take(rank_, peer, slot, what);
  if (source.size() != posted.buffer.size()) {  // a message of another shape: never copy past it
    throw std::logic_error(fmt::format("{}: {} x {} sent into a buffer of {} x {}", what,
                                       source.rows(), source.cols(), posted.buffer.rows(),
                                       posted.buffer.cols()));
  }
  for (cudaEvent_t event : {ready, posted.allocated}) {
    PIPETTE_CUDA_CHECK(cudaStreamWaitEvent(copy_, event, 0));
    PIPETTE_CUDA_CHECK(cudaEventDestroy(event));
  }
  PIPETTE_CUDA_CHECK(cudaMemcpyAsync(posted.buffer.data(), source.data(),
                                     static_cast<std::size_t>(source.bytes()),
                                     cudaMemcpyDeviceToDevice, copy_));
  source.set_stream(copy_);  // freed in the copy stream's order, after the copy
  source = DeviceTensor();
  OrderStreams(copy_, dev.stream());
  return std::move(posted.buffer);
}

void VirtualFabric::EndProgram(RankDevice& dev) {
  dev.Synchronize();
  PIPETTE_CUDA_CHECK(cudaStreamSynchronize(copy_));
}

void VirtualFabric::Barrier(const std::string& what) {
  hub_.Meet(
      "barrier", hub_.ranks(), [] {}, [] {}, what);
}

void VirtualFabric::AllReduceReplicas(float*, std::int64_t, RankDevice&) {
  throw std::logic_error("--virtual-ranks runs one replica: there is no data-parallel reduction");
}

std::vector<std::vector<std::string>> VirtualFabric::GatherNames(
    const std::vector<std::string>& mine) {
  VirtualHub::Scratch& s = hub_.scratch();
  hub_.Meet(
      "names", hub_.ranks(),
      [&] {
        s.names.resize(hub_.ranks());
        s.names[rank_] = mine;
      },
      [] {}, "the other ranks to list their parameters");
  return s.names;
}

void VirtualFabric::AllReduceAmong(const std::vector<int>& ranks, const std::string& name,
                                   float* data, std::int64_t n, RankDevice& dev) {
  dev.Synchronize();  // this rank's part is ready for the others' streams
  VirtualHub::Scratch& s = hub_.scratch();
  const std::string key = "sum " + name;
  hub_.Meet(
      key, static_cast<int>(ranks.size()), [&] { s.sums[key].emplace_back(data, &dev); },
      [&] {
        // The last to arrive sums every copy into the first and copies the sum back, on its stream.
        std::vector<std::pair<float*, RankDevice*>>& parts = s.sums[key];
        float* total = parts.front().first;
        for (std::size_t i = 1; i < parts.size(); ++i) {
          kernels::Axpy(1.0f, parts[i].first, n, total, dev.stream());
        }
        for (std::size_t i = 1; i < parts.size(); ++i) {
          PIPETTE_CUDA_CHECK(cudaMemcpyAsync(parts[i].first, total,
                                             static_cast<std::size_t>(n) * sizeof(float),
                                             cudaMemcpyDeviceToDevice, dev.stream()));
        }
        dev.Synchronize();
        parts.clear();
      },
      fmt::format("the other holders of {} to sum its gradient", name));
}

StepTotals VirtualFabric::ReduceStep(double loss, double start, double end) {
  VirtualHub::Scratch& s = hub_.scratch();
  hub_.Meet(
      "step", hub_.ranks(),
      [&] {
        StepTotals& a = s.accumulated;
        if (s.accumulated_count++ == 0) {
          a = {0, std::numeric_limits<double>::infinity(),
               -std::numeric_limits<double>::infinity()};
        }
        a.loss_sum += loss;
        a.earliest_start = std::min(a.earliest_start, start);
        a.latest_end = std::max(a.latest_end, end);
      },
      [&] {
        s.result = s.accumulated;
        s.accumulated_count = 0;
      },
      "the other ranks to finish the step");
  return s.result;
}

}  // namespace pipette::cuda
