#include "trainer.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "check.h"
#include "nccl_fabric.h"
#include "pipette/common/byte_codec.h"
#include "pipette/engine/step_loop.h"
#include "virtual_fabric.h"

namespace pipette::cuda {
namespace {

GemmPrecision PrecisionOf(const TrainOptions& options) {
  return options.dtype == "bf16" ? GemmPrecision::kBf16 : GemmPrecision::kFp32;
}

// One virtual rank's share of the run.
struct VirtualRankResult {
  std::string error;  // empty when it finished
  RankContribution contribution;
  std::vector<double> losses, step_times;
  NamedTensors first_grads, final_params;
};

void RunVirtualRank(const TrainPlan& plan, const TrainOptions& options, int rank, VirtualHub& hub,
                    const StepCallback& on_step, double t0, VirtualRankResult& out) {
  PIPETTE_CUDA_CHECK(cudaSetDevice(0));
  RankDevice dev(PrecisionOf(options));
  VirtualFabric fabric(hub, rank);
  CudaRankRuntime runtime(plan, options, {rank, rank, 0}, dev, fabric,
                          rank == 0 ? on_step : StepCallback());
  runtime.ShareParameters();
  runtime.set_start(t0);
  StepLoopOptions loop;
  loop.steps = options.steps;
  loop.trace_steps = options.trace_steps;
  RankLog log;
  fabric.Barrier("the other ranks to start");
  const Status status = RunSteps(plan.program, rank, MessageSizesOf(plan), loop, runtime, log);
  if (!status.ok()) throw std::runtime_error(status.message());
  RankContribution& c = out.contribution;
  c.peak_bytes = static_cast<double>(dev.meter().peak);
  c.static_bytes = static_cast<double>(runtime.static_bytes());
  c.peak_rss_bytes = PeakRssBytes();
  c.owned_elements = runtime.owned_elements();
  c.stage_memory = runtime.stage_memory();
  c.log = std::move(log);
  out.losses = runtime.losses();
  out.step_times = runtime.step_times();
  if (options.verify) {
    out.first_grads = runtime.first_grads();
    out.final_params = runtime.Snapshot(false);
  }
}

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

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: clear the sticky error
    return 0;
  }
  return count;
}

std::string DeviceDescription() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return fmt::format("no CUDA device ({})",
                       err != cudaSuccess ? cudaGetErrorString(err) : "none found");
  }
  cudaDeviceProp prop{};
  int driver = 0;
  (void)cudaGetDeviceProperties(&prop, 0);
  (void)cudaDriverGetVersion(&driver);
  return fmt::format("{} x {}, {:.0f} GiB, sm_{}{}, driver CUDA {}.{}", count, prop.name,
                     static_cast<double>(prop.totalGlobalMem) / (1 << 30), prop.major, prop.minor,
                     driver / 1000, (driver % 1000) / 10);
}

Status CheckCudaOptions(const TrainPlan& plan, const TrainOptions& options) {
  if (options.dtype != "fp32" && options.dtype != "bf16") {
    return Status::InvalidArgument(
        fmt::format("--dtype {}: the cuda engine computes in fp32 or bf16", options.dtype));
  }
  if (options.virtual_ranks && plan.dp != 1) {
    return Status::InvalidArgument(fmt::format(
        "--dp {} with --virtual-ranks: virtual ranks run one replica (--dp 1) on one GPU",
        plan.dp));
  }
  if (DeviceCount() == 0) {
    return Status::FailedPrecondition(
        fmt::format("--engine cuda: this machine has {}", DeviceDescription()));
  }
  return Status::Ok();
}

// The threads of a virtual-ranks run and what they share. Owned jointly by the threads, so that a
// rank that hangs (and is left behind) never touches freed memory.
struct VirtualRun {
  VirtualRun(int p, double timeout_s) : hub(p, timeout_s), results(p), done(p, false) {}
  VirtualHub hub;
  std::vector<VirtualRankResult> results;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> done;
  int finished = 0;
};

// Waits for every rank's thread; once one failed, gives the others the peer timeout (plus a
// margin) to notice, then leaves a hung one behind (detached) and reports it. Returns the ranks
// that did not stop.
std::vector<int> JoinWithin(VirtualRun& run, std::vector<std::thread>& threads, double timeout_s) {
  const int p = static_cast<int>(threads.size());
  std::unique_lock<std::mutex> lock(run.mu);
  while (run.finished < p && !run.hub.failed()) {
    run.cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  run.cv.wait_for(lock, std::chrono::duration<double>(timeout_s + 5),
                  [&] { return run.finished == p; });
  std::vector<int> hung;
  for (int r = 0; r < p; ++r) {
    if (!run.done[r]) hung.push_back(r);
  }
  lock.unlock();
  for (int r = 0; r < p; ++r) {
    if (std::find(hung.begin(), hung.end(), r) == hung.end()) {
      threads[r].join();
    } else {
      threads[r].detach();
    }
  }
  return hung;
}

// The run's error: the first rank's own failure (not the others' reactions to it), else a hung
// rank; OK when every rank finished. A failed or hung rank is not the user's input: Internal
// (exit 1, as a rank the watchdog ends).
Status FirstFailure(const VirtualRun& run, const std::vector<int>& hung) {
  const int p = static_cast<int>(run.results.size());
  for (int r = 0; r < p; ++r) {
    const std::string& error = run.results[r].error;
    if (!error.empty() && error.find("gave up") == std::string::npos) {
      return Status::Internal(fmt::format("rank {}: {}", r, error));
    }
  }
  if (!hung.empty()) {
    return Status::Internal(fmt::format(
        "rank {} stopped making progress (the others waited --peer-timeout)", hung.front()));
  }
  for (int r = 0; r < p; ++r) {
    if (!run.results[r].error.empty()) {
      return Status::Internal(fmt::format("rank {}: {}", r, run.results[r].error));
    }
  }
  return Status::Ok();
}

Result<CudaTrainResult> TrainVirtualRanks(const TrainPlan& plan, const TrainOptions& options,
                                          const StepCallback& on_step) {
  PIPETTE_RETURN_IF_ERROR(CheckCudaOptions(plan, options));
  const int p = plan.p();
  auto run = std::make_shared<VirtualRun>(p, options.peer_timeout_s);
  const double t0 =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&plan, &options, &on_step, run, r, t0] {
      try {
        RunVirtualRank(plan, options, r, run->hub, on_step, t0, run->results[r]);
      } catch (const std::exception& e) {
        run->results[r].error = e.what();
        run->hub.Fail(fmt::format("rank {} failed: {}", r, e.what()));
      }
      std::lock_guard<std::mutex> lock(run->mu);
      run->done[r] = true;
      ++run->finished;
      run->cv.notify_all();
    });
  }
  const std::vector<int> hung = JoinWithin(*run, threads, options.peer_timeout_s);
  PIPETTE_RETURN_IF_ERROR(FirstFailure(*run, hung));
  CudaTrainResult result;
  std::vector<RankContribution> ranks;
  for (VirtualRankResult& r : run->results) {
    ranks.push_back(std::move(r.contribution));
    result.first_grads.merge(r.first_grads);
    result.final_params.merge(r.final_params);
  }
  result.report =
      AssembleReport(plan, options, run->results[0].losses, run->results[0].step_times, ranks);
  return result;
}

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
  RankContribution c;
  c.peak_bytes = static_cast<double>(dev.meter().peak);
  c.static_bytes = static_cast<double>(runtime.static_bytes());
  c.peak_rss_bytes = PeakRssBytes();
  c.owned_elements = replica == 0 ? runtime.owned_elements() : 0;
  c.stage_memory = runtime.stage_memory();
  if (replica == 0) c.log = std::move(log);
  const std::vector<std::vector<char>> gathered = fabric.GatherBytes(PackContribution(c));
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
