// NcclFabric: the Fabric of one MPI process per GPU. Pipeline messages are ncclSend/ncclRecv on
// the rank's communication stream, ordered after the producing compute (and before the consuming
// one) by CUDA events; the sends and receives one stretch of the program issues between two
// computes go out as one NCCL group (send_recv_groups.h spells the grouping out, and why it cannot
// deadlock; tests/cuda/send_recv_groups_test checks it in a model of this fabric). Gradients are
// all-reduced with NCCL over the data-parallel communicator, shared parameters over communicators
// split for their holders. Barriers, the loss and the report's gather use MPI.
//
// The host never waits inside a step: a receive orders its data before the consuming compute on
// the device, and EndProgram waits for every receive in program order (naming the first one that
// does not arrive), the rank's computes and its sends.
// Waits are bounded: each polls its CUDA event (or MPI request) under the run's watchdog and
// checks NCCL's asynchronous error; an NCCL error aborts the communicators and throws. A dead peer
// makes the watchdog end the process after --peer-timeout, and mpirun the others.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fabric.h"
#include "pipette/engine/watchdog.h"

namespace pipette::cuda {

class NcclFabric final : public Fabric {
 public:
  // Collective over MPI_COMM_WORLD: world rank w is pipeline rank w % p of replica w / p. Creates
  // the NCCL communicators (the id travels over MPI) and the communication stream on the current
  // device.
  NcclFabric(int p, Watchdog& dog);
  ~NcclFabric() override;
  NcclFabric(const NcclFabric&) = delete;
  NcclFabric& operator=(const NcclFabric&) = delete;

  void Send(int peer, std::int64_t slot, DeviceTensor tensor, RankDevice& dev) override;
  void PostRecv(int peer, std::int64_t slot, DeviceTensor buffer, RankDevice& dev) override;
  DeviceTensor WaitRecv(int peer, std::int64_t slot, RankDevice& dev,
                        const std::string& what) override;
  void Flush(RankDevice& dev) override;
  void EndProgram(RankDevice& dev) override;

  void Barrier(const std::string& what) override;
  void AllReduceReplicas(float* data, std::int64_t n, RankDevice& dev) override;
  std::vector<std::vector<std::string>> GatherNames(const std::vector<std::string>& mine) override;
  void AllReduceAmong(const std::vector<int>& ranks, const std::string& name, float* data,
                      std::int64_t n, RankDevice& dev) override;
  StepTotals ReduceStep(double loss, double start, double end) override;

  // Every world rank's bytes on world rank 0 (empty elsewhere).
  std::vector<std::vector<char>> GatherBytes(const std::vector<char>& mine);

 private:
  struct PendingOp {
    bool send = false;
    int peer = 0;
    std::int64_t slot = 0;
    float* data = nullptr;
    std::int64_t n = 0;
  };
  // Waits (host) until `event` has happened, under the watchdog; NCCL errors throw.
  void WaitEvent(cudaEvent_t event, const std::string& what);
  // Waits (host) until `stream` has done its work, under the watchdog; NCCL errors throw.
  void WaitStream(cudaStream_t stream, const std::string& what);
  void CheckAsync();
  void WaitMpi(MPI_Request* request, const std::string& what);
  // Splits a communicator off the pipeline's for every set of ranks that shares a parameter (a
  // collective over the pipeline ranks, in the same order on each).
  void SplitGroups(const std::vector<std::vector<int>>& groups);
  // Aborts every communicator (after an NCCL error) so that no call waits on them any more.
  void AbortAll();

  Watchdog& dog_;
  int p_ = 1, world_rank_ = 0, world_size_ = 1, pp_rank_ = 0, replica_ = 0;
  ncclComm_t world_ = nullptr, pp_ = nullptr, dp_ = nullptr;
  std::map<std::vector<int>, ncclComm_t> groups_;
  MPI_Comm mpi_pp_ = MPI_COMM_NULL;
  cudaStream_t comm_ = nullptr;
  std::vector<PendingOp> queued_;
  std::vector<DeviceTensor> sending_;                            // until EndProgram
  std::map<std::pair<int, std::int64_t>, DeviceTensor> posted_;  // (peer, slot) -> buffer
  std::map<std::pair<int, std::int64_t>, cudaEvent_t> arrived_;  // recorded after the receive
  std::vector<std::pair<cudaEvent_t, std::string>> waited_;      // this step's, program order
};

}  // namespace pipette::cuda
