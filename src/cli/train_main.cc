// pipette-train, the binary behind `pipette train` (which execs it, so MPI stays out of the main
// binary: SimGrid's SMPI exports MPI_* symbols of its own that would capture MPI_Init).
//
// `mpirun -np P*D pipette train --engine cpu [--model tiny|NAME] [--schedule NAME] [-p P] [-v V]
//  [--dp D] [-m M] [--steps N] [--micro-batch-size B] [--seq-len L] [--seed S] [--lr X]
//  [--weight-decay X] [--verify] [--peer-timeout S] [--rank-speed R=S,..]
//  [--microbatch-seqlens LIST|FILE] [--db FILE] [--format text|json]`: real
// pipeline-parallel training on the CPU engine (backends/cpu/trainer.h), one MPI process per rank.
// Rank 0 prints and records; the others stay silent unless they fail. With p = dp = 1 it also runs
// without mpirun.
#include <cblas.h>
#include <fmt/core.h>
#include <mpi.h>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "cli/exit_code.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "cli/train_options.h"
#include "cli/train_report.h"
#include "cpu/blas_kernel.h"
#include "cpu/memory_estimate.h"
#include "cpu/trainer.h"
#include "pipette/common/printable.h"
#include "pipette/common/progress_line.h"
#include "pipette/store/training_run.h"
#if PIPETTE_HAS_CUDA_ENGINE
#include "cuda/nccl_trainer.h"
#endif

namespace pipette::cli {
namespace {

// The plan, refused when its estimated memory exceeds this machine's (before anything is
// allocated: gpt3-175b grew to 12 GB before bad_alloc), or, for the CUDA engine, when this machine
// cannot run it.
Result<TrainPlan> PlanWithinMemory(const TrainCommandOptions& o) {
  const TrainOptions& t = o.train;
  PIPETTE_ASSIGN_OR_RETURN(TrainPlan plan, PlanTraining(t));
#if PIPETTE_HAS_CUDA_ENGINE
  if (o.engine == "cuda") {  // a GPU, the dtype, one replica for virtual ranks: before recording
    PIPETTE_RETURN_IF_ERROR(cuda::CheckCudaOptions(plan, t));
    return plan;
  }
#endif
  if (o.engine != "cpu") return plan;  // the CPU engine's estimate of host memory
  PIPETTE_ASSIGN_OR_RETURN(const cpu::TrainMemoryEstimate estimate,
                           cpu::EstimateTrainMemory(plan, t.verify));
  PIPETTE_ASSIGN_OR_RETURN(const cpu::AvailableMemory available, cpu::MachineMemory());
  PIPETTE_RETURN_IF_ERROR(
      cpu::CheckTrainMemory(plan, estimate, cpu::RanksOnThisHost(plan.world_size()), available));
  return plan;
}

// Every rank plans the run; the ranks agree that they were started with the same configuration
// and that there are as many of them as the plan needs. Returns the plan, or the first error of
// any rank.
Result<TrainPlan> PlanTogether(const TrainCommandOptions& o, Watchdog& dog) {
  Result<TrainPlan> plan = PlanWithinMemory(o);
  std::string config;
  if (plan.ok()) config = nlohmann::ordered_json(TrainingConfigOf(o.engine, o.train, *plan)).dump();
  Status agreed;
  Watched(dog, "the other ranks to agree on the configuration",
          [&] { agreed = cpu::AgreeOnConfiguration(plan.status(), config); });
  if (!agreed.ok()) return agreed;
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  PIPETTE_RETURN_IF_ERROR(cpu::CheckWorldSize(*plan, world));
  return plan;
}

#if PIPETTE_HAS_CUDA_ENGINE
// The CUDA engine's run; with --verify, world rank 0 checks it against the CPU engine's
// unpipelined reference (the engines do not link each other; this binary links both).
Result<TrainReport> TrainOnCuda(const TrainCommandOptions& o, const TrainPlan& plan, Watchdog& dog,
                                const StepCallback& on_step) {
  const TrainOptions& t = o.train;
  // A device or NCCL error of this rank (NCCL path) becomes its Internal status.
  auto train = [&]() -> Result<cuda::CudaTrainResult> {
    if (t.virtual_ranks) return cuda::TrainVirtualRanks(plan, t, on_step);
    try {
      return cuda::TrainOnNccl(plan, t, dog, on_step);
    } catch (const std::exception& e) {
      int world_rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      return Status::Internal(fmt::format("world rank {}: {}", world_rank, e.what()));
    }
  };
  Result<cuda::CudaTrainResult> result = train();
  if (!result.ok()) return result.status();
  int rank = 0;
  if (!t.virtual_ranks) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (t.verify && rank == 0) {
    PIPETTE_ASSIGN_OR_RETURN(
        result->report.verification,
        cpu::VerifyAgainstReference(plan, t, result->first_grads, result->final_params,
                                    result->report.losses));
  }
  return std::move(result->report);
}
#endif

// The CPU engine records each finished step as the run goes, so a kill keeps every finished step
// (every rank passes the callback, all take part in each step's gather; rank 0 writes). The first
// write that fails is reported once and ends the step records: the run's end writes every row
// again, and reports its own failure.
StepReportCallback RecordEachStep(const TrainCommandOptions& o, const TrainPlan& plan,
                                  std::optional<RunRecorder>& recorder) {
  if (o.record.no_db) return {};
  return [&o, &plan, &recorder, failed = false](int step, const TrainReport& r) mutable {
    if (failed || !recorder || !recorder->enabled()) return;
    const Status s =
        recorder->RecordStep(TrainingStepData(plan, step, r, o.train.virtual_ranks), step + 1);
    if (s.ok()) return;
    failed = true;
    fmt::print(stderr,
               "pipette train: recording step {} failed: {}; the run's rows are written again at "
               "its end\n",
               step + 1, Printable(s.message()));
  };
}

Result<TrainReport> TrainOnEngine(const TrainCommandOptions& o, const TrainPlan& plan,
                                  Watchdog& dog, const StepCallback& on_step,
                                  std::optional<RunRecorder>& recorder) {
#if PIPETTE_HAS_CUDA_ENGINE
  if (o.engine == "cuda") return TrainOnCuda(o, plan, dog, on_step);
#endif
  return cpu::TrainOnMpi(plan, o.train, dog, on_step, RecordEachStep(o, plan, recorder));
}

// What BeginRecording returns when another run holds the sweep point (--point-key): no rank
// trains, and rank 0 says which run holds it (ReportPointHeld), as `pipette simulate` does.
constexpr int kPointHeld = -1;

// Rank 0 registers the run before training (a crash leaves it `running` for `runs --repair`) and
// tells every rank how that went. Returns the exit code every rank ends with if it failed, or
// kPointHeld.
int BeginRecording(const TrainCommandOptions& o, const TrainPlan& plan, int rank, Watchdog& dog,
                   std::optional<RunRecorder>& recorder) {
  Status begun;
  bool held = false;
  if (rank == 0) {
    Result<RunRecorder> r =
        BeginRecording(o.record, o.engine, TrainingConfigOf(o.engine, o.train, plan));
    begun = r.status();
    if (r.ok()) {
      held = r->held().has_value();
      recorder = std::move(*r);
    }
    if (recorder && recorder->enabled()) {
      // The watchdog ends the process without unwinding: it marks the run failed on its own
      // connection first.
      dog.set_on_expiry([path = recorder->path(), id = recorder->run_id()](const std::string& why) {
        Result<ExperimentDb> db = ExperimentDb::Open(path);
        if (db.ok()) (void)db->FailRun(id, why);
      });
    }
  }
  int code = held ? kPointHeld : ExitCodeOf(begun);
  if (!o.train.virtual_ranks) {  // virtual ranks share this process: nobody else to tell
    Watched(dog, "rank 0 to open the database",
            [&] { MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD); });
  }
  if (rank == 0 && !begun.ok()) (void)ReportError("train", begun);
  return code;
}

// A CSV schedule's p and m are the file's: -p and -m left at their defaults are not passed on
// (MakeSchedule takes 0 as "the file's"), and given ones must agree with the file.
void TakeCsvCountsFromFile(TrainCommandOptions& o) {
  if (!o.train.schedule.starts_with("csv:")) return;
  if (o.p_option->count() == 0) o.train.p = 0;
  if (o.m_option->count() == 0) o.train.m = 0;
}

// Trains and, on world rank 0, records and prints; returns this rank's exit code.
int TrainAndReport(const TrainCommandOptions& o, const TrainPlan& plan, int rank, Watchdog& dog,
                   std::optional<RunRecorder>& recorder) {
  const bool text = rank == 0 && o.format == "text";
  if (text) std::cout << TrainingHeader(SettingsOf(o), plan);
  // On a terminal, past 2 s: the steps done and the time left, under the step lines. Under mpirun
  // the rank's standard error reaches the terminal through a pipe apart from its output: the line
  // goes to standard output then (text only, where mpirun's is a terminal), in order with the
  // steps.
  std::FILE* stream = stderr;
  bool wanted = rank == 0 && ProgressWanted(o.quiet);
  const char* setting = std::getenv("PIPETTE_PROGRESS");
  if (rank == 0 && !wanted && text && !o.quiet &&
      (setting == nullptr || std::string_view(setting) != "0") && LauncherOutputIsTerminal()) {
    stream = stdout;
    wanted = true;
  }
  ProgressLine progress("pipette train", stream, wanted);
  const StepCallback on_step = [&](int step, double loss, double seconds) {
    progress.End();
    if (text) std::cout << TrainingStepLine(plan, step, loss, seconds) << std::flush;
    progress.Update(
        step + 1, o.train.steps,
        fmt::format("{} of {} steps, the last {:.3g} s", step + 1, o.train.steps, seconds));
  };
  Result<TrainReport> report = TrainOnEngine(o, plan, dog, on_step, recorder);
  progress.End();
  if (!report.ok()) {
    // A GPU rank's own failure (a CUDA, cuBLAS or NCCL error) is known to that rank alone: it
    // says so and ends the job, so that no peer waits for it until the watchdog.
    const bool own_failure = o.engine == "cuda" && !o.train.virtual_ranks &&
                             report.status().code() == StatusCode::kInternal;
    if (rank == 0 || own_failure) (void)ReportError("train", report.status());
    if (rank == 0) (void)recorder->Fail(report.status().message());
    if (own_failure) MPI_Abort(MPI_COMM_WORLD, kExitFailure);
    return ExitCodeOf(report.status());
  }
  return rank == 0 ? Report(o, plan, *report, *recorder) : kExitOk;
}

// --virtual-ranks: every rank is a thread of this one process on one GPU, so there is no MPI.
int RunVirtualTrain(const TrainCommandOptions& o, Watchdog& dog) {
  Result<TrainPlan> plan = PlanWithinMemory(o);
  if (!plan.ok()) return ReportError("train", plan.status());
  std::optional<RunRecorder> recorder;
  const int code = BeginRecording(o, *plan, /*rank=*/0, dog, recorder);
  if (code == kPointHeld) {
    return ReportPointHeld("train", o.record, *recorder, o.format == "json");
  }
  if (code != kExitOk) return code;
  return TrainAndReport(o, *plan, 0, dog, recorder);
}

int RunTrain(const TrainCommandOptions& o) {
  const TrainOptions& t = o.train;
  if (Status checked = CheckOptions(o); !checked.ok()) return ReportError("train", checked);
  openblas_set_num_threads(1);  // one core per rank

  // Every wait on peers is bounded, MPI_Init's included.
  Watchdog dog(cpu::LauncherRank().value_or(0), t.peer_timeout_s > 0 ? t.peer_timeout_s : 300);
  if (t.virtual_ranks) return RunVirtualTrain(o, dog);
  int provided = 0;
  Watched(dog, "MPI_Init (the other ranks to start)",
          [&] { MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); });
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  dog.set_rank(rank);
  auto finish = [](int code) {
    MPI_Finalize();
    return code;
  };
  // The watchdog is a second thread (it makes no MPI calls): FUNNELED is what that needs.
  if (provided < MPI_THREAD_FUNNELED) {
    if (rank == 0) {
      fmt::print(stderr, "pipette train: this MPI library does not provide MPI_THREAD_FUNNELED\n");
    }
    return finish(kExitFailure);
  }
  Result<TrainPlan> plan = PlanTogether(o, dog);
  if (!plan.ok()) {
    if (rank == 0) (void)ReportError("train", plan.status());
    return finish(ExitCodeOf(plan.status()));
  }
  std::optional<RunRecorder> recorder;
  if (const int code = BeginRecording(o, *plan, rank, dog, recorder); code == kPointHeld) {
    return finish(rank == 0 ? ReportPointHeld("train", o.record, *recorder, o.format == "json")
                            : kExitOk);
  } else if (code != kExitOk) {
    return finish(code);
  }

  return finish(TrainAndReport(o, *plan, rank, dog, recorder));
}

}  // namespace
}  // namespace pipette::cli

#if defined(__SANITIZE_ADDRESS__)
// Sanitizer builds (scripts/sanitize.sh): OpenMPI 4.1 leaves its own allocations behind at exit
// (hwloc, unloaded MCA components, so no suppression can name them), so this binary, the only one
// that starts MPI, is exempt from the leak check at exit; ASan's and UBSan's other checks stay on.
// LeakSanitizer asks this hook whatever ASAN_OPTIONS says.
extern "C" int __lsan_is_turned_off() { return 1; }
#endif

int main(int argc, char** argv) {
  pipette::cpu::EnsureBlasKernel(argv);  // may execute this program again, before MPI starts
  pipette::cli::IgnoreFileSizeSignal();
  using namespace pipette::cli;
  using pipette::kExitFailure;
  CLI::App app{
      "pipette train: real pipeline-parallel training, one MPI process per rank "
      "(mpirun -np P*D pipette train ...)"};
  app.name("pipette train");
  auto options = std::make_shared<TrainCommandOptions>();
  AddTrainOptions(&app, options);
  pipette::cli::RequireWellFormedValues(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return FinishOutput("train", ReportParseError(app, e, "train"));
  }
  TakeCsvCountsFromFile(*options);
  try {
    return FinishOutput("train", RunTrain(*options));
  } catch (const std::exception& e) {
    fmt::print(stderr, "pipette train: internal error: {}\n", e.what());
    return kExitFailure;
  }
}
