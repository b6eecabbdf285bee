// MpiFabric: the CPU engine's Fabric (fabric.h) over MPI. Pipeline messages are non-blocking
// point-to-point messages on the replica's pipeline communicator, tagged by their slot; gradient
// reductions are packed MPI_Allreduce calls (param_sync.h); every wait runs under the Watchdog.
// Borrows the communicators and the watchdog, which must outlive it; owns the communicators of the
// shared-parameter groups.
#pragma once

#include <mpi.h>

#include <map>
#include <utility>
#include <vector>

#include "fabric.h"
#include "param_sync.h"
#include "pipette/engine/watchdog.h"

namespace pipette::cpu {

class MpiFabric final : public Fabric {
 public:
  // `pp_comm`: the replica's pipeline ranks; `dp_comm`: this pipeline rank in every replica.
  MpiFabric(const RankPlace& place, MPI_Comm pp_comm, MPI_Comm dp_comm, Watchdog& dog)
      : place_(place), pp_comm_(pp_comm), dp_comm_(dp_comm), dog_(dog) {}

  double Clock() override { return MPI_Wtime(); }
  void Send(int peer, std::int64_t slot, Tensor tensor) override;
  void PostRecv(int peer, std::int64_t slot, Tensor buffer) override;
  Tensor WaitRecv(int peer, std::int64_t slot, const std::string& what) override;
  void EndProgram() override;

  void Barrier(const std::string& what) override;
  void BarrierReplicas(const std::string& what) override;
  void AllReduceReplicas(ParamSet& params) override;
  std::set<std::string> ShareParameters(const ParamSet& params) override;
  void SumSharedGrads(ParamSet& params) override;
  Result<NamedTensors> GatherOwned(const ParamSet& params, const std::set<std::string>& owned,
                                   bool grads, bool send, const std::string& what) override;
  StepTotals ReduceStep(double loss, double start, double end) override;

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    Tensor tensor;
  };

  const RankPlace place_;
  const MPI_Comm pp_comm_, dp_comm_;
  Watchdog& dog_;
  std::vector<SharedGroup> shared_;
  std::map<std::pair<int, std::int64_t>, Pending> recvs_;  // by (peer, slot)
  std::vector<std::pair<MPI_Request, Tensor>> sends_;
};

}  // namespace pipette::cpu
