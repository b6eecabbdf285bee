// VirtualFabric: the Fabric of --virtual-ranks, every pipeline rank a thread of one process on one
// GPU. A message is a device-to-device copy on the receiver's stream, ordered after the sender's
// compute by a CUDA event; collectives meet in a VirtualHub that the ranks' threads share. One
// replica only (no data parallelism). A rank that fails calls VirtualHub::Fail, which ends every
// other rank's wait at once with PeerTimeout; a rank that hangs ends them after the peer timeout.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "fabric.h"

namespace pipette::cuda {

class VirtualHub {
 public:
  // `ranks` threads take part; every wait gives up after `timeout_s` seconds.
  VirtualHub(int ranks, double timeout_s) : ranks_(ranks), timeout_s_(timeout_s) {}
  ~VirtualHub();

  int ranks() const { return ranks_; }

  // What the collectives exchange: written inside Meet's callbacks (under the hub's lock), read
  // after the Meet that completes it (no rank can start the next one before every rank left it).
  struct Scratch {
    std::vector<std::vector<std::string>> names;
    std::map<std::string, std::vector<std::pair<float*, RankDevice*>>> sums;
    StepTotals accumulated, result;
    int accumulated_count = 0;
  };
  Scratch& scratch() { return scratch_; }
  // Ends every wait, now and later, with PeerTimeout carrying `why`.
  void Fail(const std::string& why);
  // Whether a rank failed or a wait timed out.
  bool failed();

  // ---- used by VirtualFabric ----
  void Post(int to, int from, std::int64_t slot, DeviceTensor tensor, cudaEvent_t ready);
  // Waits for the message (to, from, slot); `what` names it in a timeout.
  std::pair<DeviceTensor, cudaEvent_t> Take(int to, int from, std::int64_t slot,
                                            const std::string& what);
  // A meeting of `participants` ranks under `key`: each calls `arrive` under the hub's lock, the
  // last also `last`; every caller returns once the last has arrived.
  void Meet(const std::string& key, int participants, const std::function<void()>& arrive,
            const std::function<void()>& last, const std::string& what);

 private:
  // Waits under `lock` until `done()`; throws PeerTimeout after the timeout or a failure.
  void WaitUntil(std::unique_lock<std::mutex>& lock, const std::function<bool()>& done,
                 const std::string& what);

  const int ranks_;
  const double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string failure_;
  std::map<std::tuple<int, int, std::int64_t>, std::pair<DeviceTensor, cudaEvent_t>> mail_;
  std::map<std::string, int> arrived_;
  std::map<std::string, long> generation_;
  Scratch scratch_;
};

class VirtualFabric final : public Fabric {
 public:
  // Creates the rank's copy stream on the current device.
  VirtualFabric(VirtualHub& hub, int rank);
  ~VirtualFabric() override;
  VirtualFabric(const VirtualFabric&) = delete;
  VirtualFabric& operator=(const VirtualFabric&) = delete;

  void Send(int peer, std::int64_t slot, DeviceTensor tensor, RankDevice& dev) override;
  void PostRecv(int peer, std::int64_t slot, DeviceTensor buffer, RankDevice& dev) override;
  DeviceTensor WaitRecv(int peer, std::int64_t slot, RankDevice& dev,
                        const std::string& what) override;
  // A send is complete once its receiver copied it; the streams' waits are on events the peers
  // have recorded already (Take returned), so the wait ends.
  void EndProgram(RankDevice& dev) override;

  void Barrier(const std::string& what) override;
  void AllReduceReplicas(float* data, std::int64_t n, RankDevice& dev) override;
  std::vector<std::vector<std::string>> GatherNames(const std::vector<std::string>& mine) override;
  void AllReduceAmong(const std::vector<int>& ranks, const std::string& name, float* data,
                      std::int64_t n, RankDevice& dev) override;
  StepTotals ReduceStep(double loss, double start, double end) override;

 private:
  VirtualHub& hub_;
  const int rank_;
  // A posted receive: its buffer and an event after the buffer's allocation on the rank's stream.
  struct Posted {
    DeviceTensor buffer;
    cudaEvent_t allocated = nullptr;
  };
  cudaStream_t copy_ = nullptr;  // messages are copied here, beside the computes
  std::map<std::pair<int, std::int64_t>, Posted> posted_;  // (peer, slot) -> its receive
};

}  // namespace pipette::cuda
