#include "nccl_trainer.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>

#include "check.h"
#include "nccl_fabric.h"
#include "pipette/common/byte_codec.h"
#include "pipette/engine/step_loop.h"

namespace pipette::cuda {
namespace {

std::vector<char> PackTensors(const NamedTensors& tensors) {
  ByteWriter out;
  out.Put(static_cast<std::uint64_t>(tensors.size()));
  for (const auto& [name, values] : tensors) {
    out.PutString(name);
    out.PutVector(values);
  }
  return out.bytes();
}

void UnpackTensors(const std::vector<char>& bytes, NamedTensors& into) {
  ByteReader in(bytes);
  const auto n = in.Get<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string name = in.GetString();
    in.AppendVector(into[name]);
  }
}

// This process's GPU: its local rank (mpirun's) modulo the node's devices.
int LocalDevice() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local % std::max(1, DeviceCount());
}

}  // namespace

Result<CudaTrainResult> TrainOnNccl(const TrainPlan& plan, const TrainOptions& options,
                                    Watchdog& dog, const StepCallback& on_step) {
  PIPETTE_RETURN_IF_ERROR(CheckCudaOptions(plan, options));
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_size != plan.world_size()) {
    return Status::InvalidArgument(
        fmt::format("-p {} --dp {} needs {} processes (mpirun -np {}), but {} were started",
                    plan.p(), plan.dp, plan.world_size(), plan.world_size(), world_size));
  }
  const int pp_rank = world_rank % plan.p(), replica = world_rank / plan.p();
  PIPETTE_CUDA_CHECK(cudaSetDevice(LocalDevice()));
  RankDevice dev(PrecisionOf(options));
  NcclFabric fabric(plan.p(), dog);
  CudaRankRuntime runtime(plan, options, {world_rank, pp_rank, replica}, dev, fabric, on_step);
  runtime.ShareParameters();
  StepLoopOptions loop;
  loop.steps = options.steps;
  loop.trace_steps = replica == 0 ? options.trace_steps : 0;  // replica 0 is traced
  RankLog log;
  fabric.Barrier("the other ranks to start");
  runtime.set_start(
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  PIPETTE_RETURN_IF_ERROR(
      RunSteps(plan.program, pp_rank, MessageSizesOf(plan), loop, runtime, log));
  const std::vector<std::vector<char>> gathered =
      fabric.GatherBytes(PackContribution(runtime.Contribution(std::move(log), replica == 0)));
  NamedTensors none;
  const bool report_tensors = options.verify && replica == 0;
  const std::vector<std::vector<char>> grads =
      fabric.GatherBytes(PackTensors(report_tensors ? runtime.first_grads() : none));
  const std::vector<std::vector<char>> params =
      fabric.GatherBytes(PackTensors(report_tensors ? runtime.Snapshot(false) : none));
  if (world_rank != 0) return CudaTrainResult();
  CudaTrainResult result;
  std::vector<RankContribution> ranks;
  for (const std::vector<char>& bytes : gathered) {
    ranks.push_back(UnpackContribution(bytes, plan.schedule.num_stages()));
  }
  for (const std::vector<char>& bytes : grads) UnpackTensors(bytes, result.first_grads);
  for (const std::vector<char>& bytes : params) UnpackTensors(bytes, result.final_params);
  result.report = AssembleReport(plan, options, runtime.losses(), runtime.step_times(), ranks);
  return result;
}

}  // namespace pipette::cuda
