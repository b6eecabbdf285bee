// TrainOnNccl: the CUDA engine with one MPI process per GPU (mpirun -np P*D), cudaSetDevice(local
// rank modulo the node's GPUs), NCCL between the GPUs (the communicator id sent over MPI) and MPI
// for barriers, the loss and the report's gather. The library pipette_cuda_nccl; the rest of the
// engine (trainer.h) needs no MPI.
#pragma once

#include "pipette/engine/watchdog.h"
#include "trainer.h"

namespace pipette::cuda {

// Trains on MPI_COMM_WORLD (MPI initialised by the caller), whose size must be plan.world_size().
// Every rank calls it; world rank 0's result is complete. Every wait on peers runs under `dog`.
// A device or NCCL error of this rank throws (check.h).
Result<CudaTrainResult> TrainOnNccl(const TrainPlan& plan, const TrainOptions& options,
                                    Watchdog& dog, const StepCallback& on_step = {});

}  // namespace pipette::cuda
