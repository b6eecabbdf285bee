// TrainMemoryEstimate: the memory a CPU training run will take, estimated from its plan before
// anything is allocated, and the check that refuses a run the machine cannot hold (gpt3-175b grew
// to 12 GB before bad_alloc).
//
// Per rank, in fp32: for every parameter of its stages 16 bytes (weight, gradient, AdamW's two
// moments), and for its stages' activations the schedule's peak count of microbatches in flight
// (Evaluation::peak_activations, peak_pending_w) times the largest stage's bytes per microbatch.
// With --verify rank 0 also trains the unpipelined reference: every parameter (16 bytes) and the
// whole step's batch at once. Each rank adds 20% for the tensors the formula does not count and
// 64 MB for the process (measured: backends/cpu/README.md). The host holds the ranks started on
// it. Pure functions except MachineMemory() and RanksOnThisHost(), which read the machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/train_plan.h"

namespace pipette::cpu {

struct TrainMemoryEstimate {
  std::vector<double> rank_bytes;        // per world rank (replica d's rank r at d * p + r)
  std::vector<double> parameter_bytes;   // per pipeline rank: weights, gradients, moments
  std::vector<double> activation_bytes;  // per pipeline rank: microbatches in flight
  double reference_bytes = 0;            // --verify: rank 0's unpipelined reference
};

// The machine's memory for the check: `bytes`, and where the figure comes from.
struct AvailableMemory {
  double bytes = 0;
  std::string source;  // "MemAvailable in /proc/meminfo", "PIPETTE_MEMORY_LIMIT_BYTES", ...
};

// Returns the estimate for `plan` (with the reference when `verify`). Errors: Evaluate()'s.
Result<TrainMemoryEstimate> EstimateTrainMemory(const TrainPlan& plan, bool verify);

// The memory this process may use: $PIPETTE_MEMORY_LIMIT_BYTES when set (a positive number:
// tests and users who share the machine), else MemAvailable from /proc/meminfo, else the
// physical memory. InvalidArgument for a malformed PIPETTE_MEMORY_LIMIT_BYTES.
Result<AvailableMemory> MachineMemory();

// The ranks of a `world`-rank run started on this host: the launcher's local size
// (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS) when it gives one, else all of them.
int RanksOnThisHost(int world);

// OK when the ranks started on this host (`ranks_on_host` of the world's, the largest first) fit
// in `available`; else InvalidArgument naming the model, the figure per rank, its parts and the
// machine's memory.
Status CheckTrainMemory(const TrainPlan& plan, const TrainMemoryEstimate& estimate,
                        int ranks_on_host, const AvailableMemory& available);

}  // namespace pipette::cpu
