#include "trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "check.h"
#include "pipette/engine/step_loop.h"
#include "virtual_fabric.h"

namespace pipette::cuda {
namespace {

// One virtual rank's share of the run.
struct VirtualRankResult {
  std::string error;     // empty when it finished
  bool gave_up = false;  // the error is a wait on the others that ended (PeerTimeout)
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
  out.contribution = runtime.Contribution(std::move(log), /*replica0=*/true);
  out.losses = runtime.losses();
  out.step_times = runtime.step_times();
  if (options.verify) {
    out.first_grads = runtime.first_grads();
    out.final_params = runtime.Snapshot(false);
  }
}

}  // namespace

GemmPrecision PrecisionOf(const TrainOptions& options) {
  return options.dtype == "bf16" ? GemmPrecision::kBf16 : GemmPrecision::kFp32;
}

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
  VirtualRun(const TrainPlan& plan, const TrainOptions& options, StepCallback on_step)
      : plan(plan),
        options(options),
        hub(plan.p(), options.peer_timeout_s),
        results(plan.p()),
        done(plan.p(), false) {
    // A rank left behind may wake after the run returned: it reports no more steps then.
    this->on_step = [this, report = std::move(on_step)](int step, double loss, double s) {
      if (report && !hub.failed()) report(step, loss, s);
    };
  }
  const TrainPlan plan;  // copies: a rank left behind never reads the caller's
  const TrainOptions options;
  StepCallback on_step;
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

// The run's error: a rank that stopped making progress, else the first rank's own failure (not
// the others' reactions to it: they gave up waiting); OK when every rank finished. A failed or
// hung rank is not the user's input: Internal (exit 1, as a rank the watchdog ends).
Status FirstFailure(const VirtualRun& run, const std::vector<int>& hung) {
  if (!hung.empty()) {
    return Status::Internal(fmt::format(
        "rank {} stopped making progress (the others waited --peer-timeout)", hung.front()));
  }
  const int p = static_cast<int>(run.results.size());
  for (const bool reactions : {false, true}) {
    for (int r = 0; r < p; ++r) {
      const VirtualRankResult& result = run.results[r];
      if (!result.error.empty() && result.gave_up == reactions) {
        return Status::Internal(fmt::format("rank {}: {}", r, result.error));
      }
    }
  }
  return Status::Ok();
}

Result<CudaTrainResult> TrainVirtualRanks(const TrainPlan& plan, const TrainOptions& options,
                                          const StepCallback& on_step) {
  PIPETTE_RETURN_IF_ERROR(CheckCudaOptions(plan, options));
  const int p = plan.p();
  auto run = std::make_shared<VirtualRun>(plan, options, on_step);
  const double t0 =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([run, r, t0] {
      try {
        RunVirtualRank(run->plan, run->options, r, run->hub, run->on_step, t0, run->results[r]);
      } catch (const PeerTimeout& e) {
        run->results[r].error = e.what();
        run->results[r].gave_up = true;
        run->hub.Fail(fmt::format("rank {} gave up: {}", r, e.what()));
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

}  // namespace pipette::cuda
