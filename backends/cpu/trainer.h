// TrainOnMpi: pipeline-parallel training on the CPU with one MPI process per rank.
//
// World rank w is pipeline rank w % p of data-parallel replica w / p. Each process builds only the
// modules of its own stages (CpuRankRuntime, cpu_rank_runtime.h) and runs the training loop every
// engine shares (RunSteps, pipette/engine/step_loop.h): its rank's lowered program through
// RunRank, then the gradients all-reduced over the replicas (one MPI_Allreduce per rank), summed
// over copies of one parameter on several pipeline ranks (tied embeddings, DualPipe's two model
// copies), and AdamW. Afterwards world rank 0 gathers the trace and the measurements.
//
// A rank never waits on a peer forever: a watchdog ends the process with a message naming what it
// waited for once a wait exceeds options.peer_timeout_s, and mpirun then ends the others.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cpu_rank_runtime.h"
#include "mpi_launch.h"
#include "pipette/common/status.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"
#include "pipette/engine/watchdog.h"
#include "reference.h"

namespace pipette::cpu {

// Trains on MPI_COMM_WORLD, whose size must be plan.world_size(). Every rank calls it; rank 0's
// report is complete. With options.verify, rank 0 also trains the unpipelined reference. Every
// wait on peers runs under `dog`. With `record_step` (given on every rank or on none: every rank
// takes part in each step's gather), world rank 0 calls it after each step with that step's report,
// so the run is recorded as it goes.
Result<TrainReport> TrainOnMpi(const TrainPlan& plan, const TrainOptions& options, Watchdog& dog,
                               const StepCallback& on_step = {},
                               const StepReportCallback& record_step = {});

}  // namespace pipette::cpu
