// How a CPU training run meets MPI: whether a launcher started this process and which rank it
// gave it (one list of launcher environment variables), and the checks every rank makes before
// anything runs (the world matches the plan, message tags fit, every rank agrees on the options).
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include "pipette/common/status.h"
#include "pipette/engine/train_plan.h"

namespace pipette::cpu {

// The world rank an MPI launcher (mpirun, srun with PMI/PMIx) gave this process, read from its
// environment before MPI_Init; nullopt when no launcher started it.
std::optional<int> LauncherRank();

// True when an MPI launcher started this process.
inline bool LaunchedByMpi() { return LauncherRank().has_value(); }

// InvalidArgument naming -p, --dp and the launch command unless `world_size` processes are what
// `plan` needs.
Status CheckWorldSize(const TrainPlan& plan, int world_size);

// InvalidArgument when `comm`'s MPI_TAG_UB cannot tag every message of a step (one tag per message
// slot, schedule/message.h).
Status CheckMessageTags(const TrainPlan& plan, MPI_Comm comm);

// Agreement before anything runs: every rank passes its own parse/plan status and its resolved
// configuration (JSON text). All ranks return the same answer: the first failing rank's error
// with its code (prefixed with its rank), or InvalidArgument naming the first key whose value
// differs from rank 0's (MPMD launches with mismatched arguments), or OK. REQUIRES: MPI
// initialised.
Status AgreeOnConfiguration(const Status& local, const std::string& config_json);

}  // namespace pipette::cpu
