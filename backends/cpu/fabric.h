// Fabric: everything of a CPU training run that crosses ranks, behind one interface, the seam the
// CUDA engine has (cuda/fabric.h): the rank runtime (cpu_rank_runtime.h) names peers, message slots
// (schedule/message.h) and tensors, and never MPI; MpiFabric (mpi_fabric.h) moves them with MPI.
//
// Every wait is bounded: the fabric runs it under the run's Watchdog, which names `what` it waited
// for when a peer died or hangs. One Fabric object per rank, used from that rank's thread only.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "param_set.h"
#include "pipette/common/status.h"
#include "pipette/engine/rank_place.h"
#include "reference.h"
#include "tensor.h"

namespace pipette::cpu {

class Fabric {
 public:
  virtual ~Fabric() = default;

  // The wall clock every rank reads alike (seconds).
  virtual double Clock() = 0;

  // ---- pipeline messages (peers are pipeline ranks of this replica; `slot` identifies the
  // message within the step) ----
  // Hands `tensor` to `peer`; returns at once (the send completes by EndProgram).
  virtual void Send(int peer, std::int64_t slot, Tensor tensor) = 0;
  // Posts the receive of `slot` from `peer` into `buffer` (of the message's shape).
  virtual void PostRecv(int peer, std::int64_t slot, Tensor buffer) = 0;
  // Waits for the posted receive and returns its tensor; `what` names the message for an error.
  virtual Tensor WaitRecv(int peer, std::int64_t slot, const std::string& what) = 0;
  // Completes this step's sends.
  virtual void EndProgram() = 0;

  // ---- collectives ----
  // Every rank of the run (all replicas).
  virtual void Barrier(const std::string& what) = 0;
  // This pipeline rank in every replica.
  virtual void BarrierReplicas(const std::string& what) = 0;
  // Sums every gradient of `params` over the replicas of this pipeline rank.
  virtual void AllReduceReplicas(ParamSet& params) = 0;
  // Collective over the replica's pipeline ranks, once before the first step: finds the
  // parameters held in several copies (SumSharedGrads sums them) and returns the names this rank
  // owns for reporting (no lower pipeline rank holds them).
  virtual std::set<std::string> ShareParameters(const ParamSet& params) = 0;
  // Sums the gradients of the parameters held in several copies over the ranks holding them.
  virtual void SumSharedGrads(ParamSet& params) = 0;
  // Gathers the owned tensors (gradients when `grads`, else values) of the ranks with `send` set
  // on world rank 0 (empty elsewhere); `what` names the gather for an error.
  virtual Result<NamedTensors> GatherOwned(const ParamSet& params,
                                           const std::set<std::string>& owned, bool grads,
                                           bool send, const std::string& what) = 0;
  // Sums the losses and takes the earliest start and latest end over every rank; the result is
  // complete on world rank 0.
  virtual StepTotals ReduceStep(double loss, double start, double end) = 0;
};

}  // namespace pipette::cpu
