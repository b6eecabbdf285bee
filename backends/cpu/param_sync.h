// ParamSync: a rank's parameters (ParamSet) across the ranks of a CPU training run.
//
// Gradients are reduced as one packed buffer per reduction: over the data-parallel replicas of a
// pipeline rank, and over the pipeline ranks that hold copies of one parameter (a tied embedding,
// DualPipe's two model copies). For reporting, the lowest pipeline rank holding a parameter owns
// it, and the owned tensors of replica 0 can be gathered on world rank 0. Every function here is a
// collective over the communicator it names; call from the rank's MPI thread.
#pragma once

#include <mpi.h>

#include <set>
#include <string>
#include <vector>

#include "param_set.h"
#include "pipette/common/status.h"
#include "reference.h"

namespace pipette::cpu {

// Sums copies[0].grad of `names` (every parameter when empty) over `comm`, in one MPI_Allreduce.
void AllReduceGrads(ParamSet& params, const std::vector<std::string>& names, MPI_Comm comm);

// Parameters held by several pipeline ranks, grouped by the set of ranks holding them, with one
// communicator per set this rank belongs to. Owns the communicator.
class SharedGroup {
 public:
  SharedGroup(MPI_Comm comm, std::vector<std::string> names)
      : comm_(comm), names_(std::move(names)) {}
  ~SharedGroup();
  SharedGroup(SharedGroup&& other) noexcept;
  SharedGroup(const SharedGroup&) = delete;
  SharedGroup& operator=(const SharedGroup&) = delete;
  SharedGroup& operator=(SharedGroup&&) = delete;

  // Sums the group's gradients over its ranks.
  void SumGrads(ParamSet& params) const { AllReduceGrads(params, names_, comm_); }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<std::string> names_;
};

// The groups of shared parameters this rank (`pp_rank` of `pp_comm`) belongs to.
std::vector<SharedGroup> MakeSharedGroups(const ParamSet& params, MPI_Comm pp_comm, int pp_rank);

// The names of this rank's parameters that it owns for reporting (no lower rank holds them).
std::set<std::string> OwnedNames(const ParamSet& params, MPI_Comm pp_comm, int pp_rank);

// Gathers the owned tensors (gradients when `grads`, else values) of the ranks with `send` set
// on world rank 0 (empty elsewhere). Internal beyond MPI's 2 GiB counts, on every rank.
Result<NamedTensors> GatherTensors(const ParamSet& params, const std::set<std::string>& owned,
                                   bool grads, bool send);

}  // namespace pipette::cpu
