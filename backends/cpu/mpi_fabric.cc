#include "mpi_fabric.h"

namespace pipette::cpu {

// ---- pipeline messages ----

void MpiFabric::Send(int peer, std::int64_t slot, Tensor tensor) {
  MPI_Request request;
  MPI_Isend(tensor.data(), static_cast<int>(tensor.size()), MPI_FLOAT, peer, static_cast<int>(slot),
            pp_comm_, &request);
  sends_.emplace_back(request, std::move(tensor));
}

void MpiFabric::PostRecv(int peer, std::int64_t slot, Tensor buffer) {
  Pending& pending = recvs_[{peer, slot}];
  pending.tensor = std::move(buffer);
  MPI_Irecv(pending.tensor.data(), static_cast<int>(pending.tensor.size()), MPI_FLOAT, peer,
            static_cast<int>(slot), pp_comm_, &pending.request);
}

Tensor MpiFabric::WaitRecv(int peer, std::int64_t slot, const std::string& what) {
  auto it = recvs_.find({peer, slot});
  Watched(dog_, what, [&] { MPI_Wait(&it->second.request, MPI_STATUS_IGNORE); });
  Tensor tensor = std::move(it->second.tensor);
  recvs_.erase(it);
  return tensor;
}

void MpiFabric::EndProgram() {
  std::vector<MPI_Request> requests;
  for (auto& [request, tensor] : sends_) requests.push_back(request);
  Watched(dog_, "this step's sends to complete", [&] {
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  });
  sends_.clear();
}

// ---- collectives ----

void MpiFabric::Barrier(const std::string& what) {
  Watched(dog_, what, [&] { MPI_Barrier(MPI_COMM_WORLD); });
}

void MpiFabric::BarrierReplicas(const std::string& what) {
  Watched(dog_, what, [&] { MPI_Barrier(dp_comm_); });
}

void MpiFabric::AllReduceReplicas(ParamSet& params) {
  Watched(dog_, "the data-parallel gradient all-reduce",
          [&] { AllReduceGrads(params, {}, dp_comm_); });
}

std::set<std::string> MpiFabric::ShareParameters(const ParamSet& params) {
  std::set<std::string> owned;
  Watched(dog_, "the other ranks to set up", [&] {
    shared_ = MakeSharedGroups(params, pp_comm_, place_.pp_rank);
    owned = OwnedNames(params, pp_comm_, place_.pp_rank);
  });
  return owned;
}

void MpiFabric::SumSharedGrads(ParamSet& params) {
  for (const SharedGroup& group : shared_) {  // after DP, so every copy ends bit-identical
    Watched(dog_, "the gradient sum over copies of shared parameters",
            [&] { group.SumGrads(params); });
  }
}

Result<NamedTensors> MpiFabric::GatherOwned(const ParamSet& params,
                                            const std::set<std::string>& owned, bool grads,
                                            bool send, const std::string& what) {
  Result<NamedTensors> gathered = NamedTensors();
  Watched(dog_, what, [&] { gathered = GatherTensors(params, owned, grads, send); });
  return gathered;
}

StepTotals MpiFabric::ReduceStep(double loss, double start, double end) {
  double sums[2] = {loss, -start}, totals[2] = {0, 0};
  double end_max = 0;
  Watched(dog_, "the loss reduction", [&] {
    MPI_Reduce(&sums[0], &totals[0], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sums[1], &totals[1], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&end, &end_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  });
  return StepTotals{totals[0], -totals[1], end_max};
}

}  // namespace pipette::cpu
