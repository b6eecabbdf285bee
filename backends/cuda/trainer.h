// The CUDA engine's training runs: the plan's programs through the loop every engine shares
// (RunSteps, pipette/engine/step_loop.h) on CudaRankRuntime.
//
//   TrainVirtualRanks  every pipeline rank a thread of this process on one GPU (--virtual-ranks):
//                      how a single GPU runs and checks the identical programs;
//   TrainOnNccl        one MPI process per GPU (mpirun -np P*D), cudaSetDevice(local rank), NCCL
//                      between the GPUs (communicator id sent over MPI).
//
// Both return world rank 0's report (pipette/engine/train_report.h) and, with options.verify, the
// tensors a caller checks against the unpipelined reference (the CPU engine's; engines do not
// link each other, so `pipette train` does the comparison).
#pragma once

#include <string>

#include "cuda_rank_runtime.h"
#include "pipette/common/status.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"
#include "pipette/engine/watchdog.h"

namespace pipette::cuda {

struct CudaTrainResult {
  TrainReport report;
  NamedTensors first_grads;   // with options.verify: gradients after step 1 (summed copies)
  NamedTensors final_params;  // with options.verify: parameters after the last step
};

// CUDA devices this process sees (0 without a GPU or a driver).
int DeviceCount();
// The device and driver in words ("NVIDIA H100 80GB HBM3, driver 13.0, sm_90"), or why there is
// none.
std::string DeviceDescription();

// The options the CUDA engine checks before it starts: --dtype fp32|bf16; --virtual-ranks runs one
// replica (--dp 1); a GPU must be present. InvalidArgument or FailedPrecondition naming the option.
Status CheckCudaOptions(const TrainPlan& plan, const TrainOptions& options);

Result<CudaTrainResult> TrainVirtualRanks(const TrainPlan& plan, const TrainOptions& options,
                                          const StepCallback& on_step = {});

// Trains on MPI_COMM_WORLD (MPI initialised by the caller), whose size must be plan.world_size(),
// on the GPU (local rank) modulo the devices this node has. Every rank calls it; world rank 0's
// result is complete. Every wait on peers runs under `dog`.
Result<CudaTrainResult> TrainOnNccl(const TrainPlan& plan, const TrainOptions& options,
                                    Watchdog& dog, const StepCallback& on_step = {});

}  // namespace pipette::cuda
