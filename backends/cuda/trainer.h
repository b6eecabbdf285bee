// The CUDA engine's training runs: the plan's programs through the loop every engine shares
// (RunSteps, pipette/engine/step_loop.h) on CudaRankRuntime.
//
//   TrainVirtualRanks  every pipeline rank a thread of this process on one GPU (--virtual-ranks):
//                      how a single GPU runs and checks the identical programs;
//   TrainOnNccl        one MPI process per GPU (nccl_trainer.h, library pipette_cuda_nccl: the
//                      only part with MPI, so the virtual-ranks binaries need no MPI at all).
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

namespace pipette::cuda {

struct CudaTrainResult {
  TrainReport report;
  NamedTensors first_grads;   // with options.verify: gradients after step 1 (summed copies)
  NamedTensors final_params;  // with options.verify: parameters after the last step
};

// The GEMM precision --dtype asks for.
GemmPrecision PrecisionOf(const TrainOptions& options);

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

}  // namespace pipette::cuda
