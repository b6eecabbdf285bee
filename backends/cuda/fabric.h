// Fabric: everything of a CUDA training run that crosses ranks, behind one interface so that the
// rank runtime (cuda_rank_runtime.h) is the same whether the ranks are threads of one process on
// one GPU (--virtual-ranks: device-to-device copies ordered by events, VirtualFabric) or processes
// on their own GPUs (NCCL for tensors, MPI for the rest: NcclFabric).
//
// Every wait is bounded by the peer timeout: a peer that died or hangs makes the wait throw
// PeerTimeout naming what it waited for (the NCCL fabric aborts its communicators first), so no
// rank waits forever. One Fabric object per rank, used from that rank's thread only; the ranks of
// a VirtualFabric share a VirtualHub.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "device_tensor.h"
#include "pipette/engine/rank_place.h"
#include "rank_device.h"

namespace pipette::cuda {

// Makes `later` wait (on the device) for what `earlier` has enqueued so far.
inline void OrderStreams(cudaStream_t earlier, cudaStream_t later) {
  cudaEvent_t event = nullptr;
  PIPETTE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  PIPETTE_CUDA_CHECK(cudaEventRecord(event, earlier));
  PIPETTE_CUDA_CHECK(cudaStreamWaitEvent(later, event, 0));
  PIPETTE_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait is done
}

// A wait on peers exceeded the peer timeout, or a peer failed.
class PeerTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Fabric {
 public:
  virtual ~Fabric() = default;

  // ---- pipeline messages (peers are pipeline ranks of this replica; `slot` identifies the
  // message within the step, schedule/message.h) ----
  // Hands `tensor` (computed on dev's stream) to `peer`; returns at once.
  virtual void Send(int peer, std::int64_t slot, DeviceTensor tensor, RankDevice& dev) = 0;
  // Posts the receive of `slot` from `peer` into `buffer` (of the message's shape).
  virtual void PostRecv(int peer, std::int64_t slot, DeviceTensor buffer, RankDevice& dev) = 0;
  // Orders the posted receive's data before whatever dev's stream runs next and returns its
  // tensor; the host does not wait for the data (EndProgram does). `what` names the message for
  // an error.
  virtual DeviceTensor WaitRecv(int peer, std::int64_t slot, RankDevice& dev,
                                const std::string& what) = 0;
  // Issues what Send and PostRecv queued (a fabric may batch them until the next compute).
  virtual void Flush(RankDevice& /*dev*/) {}
  // Completes this step's sends and waits until dev's stream has run the step's program (every
  // receive arrived), bounded by the peer timeout.
  virtual void EndProgram(RankDevice& dev) = 0;

  // ---- collectives ----
  // Every rank of the run (all replicas).
  virtual void Barrier(const std::string& what) = 0;
  // Sums `n` floats at `data` (on dev's stream) over the replicas of this pipeline rank.
  virtual void AllReduceReplicas(float* data, std::int64_t n, RankDevice& dev) = 0;
  // The parameter names every pipeline rank of this replica holds (index: pipeline rank).
  virtual std::vector<std::vector<std::string>> GatherNames(
      const std::vector<std::string>& mine) = 0;
  // Sums `n` floats at `data` over the pipeline ranks `ranks` of this replica (sorted, this rank
  // among them); every member calls it in the same order, with `name` naming the tensor.
  virtual void AllReduceAmong(const std::vector<int>& ranks, const std::string& name, float* data,
                              std::int64_t n, RankDevice& dev) = 0;
  // Sums the losses and takes the earliest start and latest end over every rank; the result is
  // complete on world rank 0.
  virtual StepTotals ReduceStep(double loss, double start, double end) = 0;
};

}  // namespace pipette::cuda
