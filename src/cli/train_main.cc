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

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "cli/train_options.h"
#include "cpu/memory_estimate.h"
#include "cpu/trainer.h"
#include "pipette/common/build_info.h"
#include "pipette/common/printable.h"
#include "pipette/engine/measured_costs.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/schedule/uneven_work.h"
#include "pipette/store/trace_rows.h"
#if PIPETTE_HAS_CUDA_ENGINE
#include "cuda/nccl_trainer.h"
#endif

namespace pipette::cli {
namespace {

nlohmann::ordered_json ConfigJson(const TrainCommandOptions& o, const TrainPlan& plan) {
  const TrainOptions& t = o.train;
  nlohmann::ordered_json c;
  c["engine"] = o.engine;
  c["model"] = t.model;
  // The resolved architecture: the same name could mean different files on different hosts.
  const DecoderSpec& spec = plan.spec;
  c["architecture"] = {{"layers", spec.layers},
                       {"hidden", spec.hidden},
                       {"heads", spec.heads},
                       {"ffn_hidden", spec.ffn_hidden},
                       {"vocab", spec.vocab},
                       {"max_positions", spec.max_positions},
                       {"tied_embeddings", spec.tied_embeddings}};
  c["schedule"] = plan.schedule.name;
  c["p"] = plan.p();
  c["v"] = plan.schedule.v;
  c["m"] = plan.m();
  c["pp"] = plan.p();
  c["dp"] = plan.dp;
  c["steps"] = t.steps;
  c["micro_batch_size"] = plan.micro_batch_size;
  c["seq_len"] = plan.seq_len;
  c["seed"] = t.seed;
  c["lr"] = t.lr;
  c["weight_decay"] = t.weight_decay;
  c["verify"] = t.verify;
  c["trace_steps"] = t.trace_steps;
  c["dtype"] = t.dtype;
  if (o.engine == "cuda") c["virtual_ranks"] = t.virtual_ranks;
  // Uneven work, in the syntax of --rank-speed and --microbatch-seqlens; only when given.
  if (plan.uneven_speed()) c["rank_speed"] = FormatRankSpeeds(plan.rank_speed);
  if (plan.variable_seqlens()) {
    c["microbatch_seqlens"] = FormatMicrobatchSeqlens(plan.microbatch_seqlens);
  }
  auto& pieces = c["pieces"] = nlohmann::ordered_json::array();
  for (const auto& layers : plan.piece_layers) pieces.push_back(layers);
  c["stage_piece"] = plan.stage_piece;
  return c;
}

// The run's measured per-stage costs as metrics "stage_f_s[s]", "stage_i_s[s]", "stage_w_s[s]" and
// "stage_b_s[s]" (docs/metrics.md), kind by kind.
void AddStageCosts(const std::vector<MeasuredStageCost>& costs, std::vector<MetricRow>& metrics) {
  const std::pair<ActionKind, const char*> kinds[] = {{ActionKind::kForward, "stage_f_s"},
                                                      {ActionKind::kInputBackward, "stage_i_s"},
                                                      {ActionKind::kWeightBackward, "stage_w_s"},
                                                      {ActionKind::kFullBackward, "stage_b_s"}};
  for (const auto& [kind, name] : kinds) {
    for (std::size_t s = 0; s < costs.size(); ++s) {
      if (const std::optional<double>& seconds = costs[s].Of(kind)) {
        metrics.push_back({fmt::format("{}[{}]", name, s), *seconds, "s"});
      }
    }
  }
}

double MeanStepTime(const TrainReport& r) {
  double mean = 0;
  for (const double t : r.step_times) mean += t / static_cast<double>(r.step_times.size());
  return mean;
}

bool Verified(const TrainCommandOptions& o, const TrainReport& r) {
  return !r.verification || r.verification->Passes(o.tolerance);
}

// The run's rows: every traced instruction, memory over time and the metrics.
RunData RunDataOf(const TrainPlan& plan, const TrainReport& r, bool virtual_ranks) {
  RunData data;
  data.events = ToEventRows(plan.program, r.trace, r.allreduces, r.updates);
  // A send's buffer is held to the end of the step's program, except between virtual ranks
  // (the receiver's copy frees it).
  data.memory = ToMemoryRows(MemoryOverTime(r.trace, r.static_bytes, r.stage_memory,
                                            /*message_buffers=*/!virtual_ranks));
  data.metrics = {{"step_time_s", MeanStepTime(r), "s"},
                  {"tokens_per_s", r.tokens_per_s, "tokens/s"},
                  {"final_loss", r.losses.back(), "nats"},
                  {"params", static_cast<double>(r.params), "count"}};
  AddPerRank(data.metrics, "loss", r.losses, "nats");
  AddPerRank(data.metrics, "step_times_s", r.step_times, "s");
  AddPerRank(data.metrics, "peak_memory_bytes", r.peak_memory_bytes, "B");
  AddPerRank(data.metrics, "peak_rss_bytes", r.peak_rss_bytes, "B");
  AddPerRank(data.metrics, "device_compute_s", r.device_compute_seconds, "s");
  if (plan.uneven_speed()) {  // the CPU time of the computes' work and of the busy waits
    AddPerRank(data.metrics, "compute_work_s", r.compute_work_seconds, "s");
    AddPerRank(data.metrics, "slowdown_s", r.slowdown_seconds, "s");
  }
  AddStageCosts(MeasureStageCosts(r.trace, plan.schedule.num_stages()), data.metrics);
  // The bytes the engine holds, so a simulation can model its memory (simulate --costs-from).
  AddPerRank(data.metrics, "static_bytes", r.static_bytes, "B");
  std::vector<double> activation, wgrad_input, workspace;
  for (const StageMemory& m : r.stage_memory) {
    activation.push_back(static_cast<double>(m.activation_bytes));
    wgrad_input.push_back(static_cast<double>(m.wgrad_input_bytes));
    workspace.push_back(static_cast<double>(m.workspace_bytes));
  }
  AddPerRank(data.metrics, "stage_activation_bytes", activation, "B");
  AddPerRank(data.metrics, "stage_wgrad_input_bytes", wgrad_input, "B");
  AddPerRank(data.metrics, "stage_workspace_bytes", workspace, "B");
  if (r.verification) {
    data.metrics.push_back(
        {"verify_grad_rel_err", r.verification->gradients.max_relative_error, "fraction"});
    data.metrics.push_back(
        {"verify_param_rel_err", r.verification->parameters.global_relative_error, "fraction"});
  }
  return data;
}

// The run's JSON line, without where it was recorded.
nlohmann::ordered_json JsonOf(const TrainCommandOptions& o, const TrainPlan& plan,
                              const TrainReport& r) {
  nlohmann::ordered_json json;
  json["engine"] = o.engine;
  json["model"] = plan.spec.name;
  json["params"] = r.params;
  json["schedule"] = plan.schedule.name;
  json["p"] = plan.p();
  json["v"] = plan.schedule.v;
  json["m"] = plan.m();
  json["dp"] = plan.dp;
  json["steps"] = o.train.steps;
  json["tokens_per_step"] = plan.tokens_per_step();
  json["losses"] = r.losses;
  json["step_time_s"] = r.step_times;
  json["tokens_per_s"] = r.tokens_per_s;
  json["peak_memory_bytes"] = r.peak_memory_bytes;
  json["peak_rss_bytes"] = r.peak_rss_bytes;
  if (!r.device_compute_seconds.empty()) json["device_compute_s"] = r.device_compute_seconds;
  json["work_s"] = r.compute_work_seconds;
  json["slowdown_s"] = r.slowdown_seconds;
  if (r.verification) {
    auto& v = json["verify"];
    v["grad_rel_err"] = r.verification->gradients.max_relative_error;
    v["grad_worst"] = r.verification->gradients.worst;
    v["param_rel_err"] = r.verification->parameters.global_relative_error;
    v["param_tensor_rel_err"] = r.verification->parameters.max_relative_error;
    v["param_worst"] = r.verification->parameters.worst;
    v["loss_diff"] = r.verification->max_loss_difference;
    v["tolerance"] = o.tolerance;
    v["ok"] = Verified(o, r);
  }
  json["status"] = Verified(o, r) ? "ok" : "failed";
  return json;
}

// ---- the text for people: a header, a line per step, a summary ----------------------------------

void PrintHeader(const TrainCommandOptions& o, const TrainPlan& plan) {
  fmt::print(
      "# pipette {} train --engine {}{}: model {} ({} layers, width {}), {} p={} v={} m={} "
      "dp={}, {} x {} tokens per microbatch\n",
      Version(), o.engine, o.train.virtual_ranks ? " --virtual-ranks" : "", plan.spec.name,
      plan.spec.layers, plan.spec.hidden, plan.schedule.name, plan.p(), plan.schedule.v, plan.m(),
      plan.dp, plan.micro_batch_size, plan.seq_len);
  if (plan.uneven_speed()) {
    fmt::print("# --rank-speed {}\n", FormatRankSpeeds(plan.rank_speed));
  }
  if (plan.variable_seqlens()) {
    fmt::print("# --microbatch-seqlens {} ({} tokens per step)\n",
               FormatMicrobatchSeqlens(plan.microbatch_seqlens), plan.tokens_per_step());
  }
  fmt::print("#  step      loss   time [ms]   tokens/s\n");
}

void PrintStep(const TrainPlan& plan, int step, double loss, double seconds) {
  const double step_tokens = static_cast<double>(plan.tokens_per_step());
  fmt::print("{:7d} {:9.4f} {:11.2f} {:10.0f}\n", step + 1, loss, seconds * 1e3,
             step_tokens / seconds);
  std::fflush(stdout);
}

void PrintVerification(const Verification& v, double tolerance) {
  fmt::print("# verify against the unpipelined reference (tolerance {:g}):\n", tolerance);
  fmt::print("#   gradients after step 1: max relative error {:.3g} ({})\n",
             v.gradients.max_relative_error, v.gradients.worst);
  fmt::print(
      "#   parameters at the end:  relative error {:.3g} (largest in one tensor: {:.3g}, {})\n",
      v.parameters.global_relative_error, v.parameters.max_relative_error, v.parameters.worst);
  fmt::print("#   loss: max difference {:.3g}\n", v.max_loss_difference);
}

void PrintSummary(const TrainCommandOptions& o, const TrainReport& r) {
  fmt::print("# mean step {:.2f} ms, {:.0f} tokens/s; peak tensor memory per rank:",
             MeanStepTime(r) * 1e3, r.tokens_per_s);
  for (const double b : r.peak_memory_bytes) fmt::print(" {:.2f} MiB", b / (1 << 20));
  fmt::print("\n");
  if (r.verification) PrintVerification(*r.verification, o.tolerance);
}

// Rank 0's recording and output after training; returns the exit code.
int Report(const TrainCommandOptions& o, const TrainPlan& plan, const TrainReport& r,
           RunRecorder& recorder) {
  const bool verified = Verified(o, r);
  const Status recorded =
      recorder.Finish(RunDataOf(plan, r, o.train.virtual_ranks), verified ? kRunOk : kRunFailed);
  if (!recorded.ok()) {
    (void)ReportError("train", recorded);
    return kExitFailure;
  }
  if (o.format == "json") {
    nlohmann::ordered_json json = JsonOf(o, plan, r);
    if (recorder.enabled()) {
      json["run_id"] = recorder.run_id();
      json["db"] = recorder.path();
    }
    std::cout << json.dump() << std::endl;
  } else {
    PrintSummary(o, r);
    if (recorder.enabled()) {
      fmt::print("# recorded as run {} in {}\n", recorder.run_id(), Printable(recorder.path()));
    }
  }
  if (!verified) {
    fmt::print(stderr,
               "pipette train: the pipelined run differs from the unpipelined reference by more "
               "than {:g} (gradients {:.3g}, parameters {:.3g})\n",
               o.tolerance, r.verification->gradients.max_relative_error,
               r.verification->parameters.global_relative_error);
    return kExitFailure;
  }
  return kExitOk;
}

// The engine's own options: --engine cuda needs a build with the CUDA engine; the CPU engine
// computes in fp32 and runs every rank as its own process.
Status CheckEngineOptions(const TrainCommandOptions& o) {
  const TrainOptions& t = o.train;
  if (o.engine == "cuda" && !CudaEngineBuilt()) {
    return Status::InvalidArgument(
        fmt::format("--engine cuda: this build has no CUDA engine ({})", CudaEngineStatus()));
  }
  if (o.engine == "cpu" && t.dtype != "fp32") {
    return Status::InvalidArgument(fmt::format(
        "--dtype {}: the cpu engine computes in fp32 (bf16 needs --engine cuda)", t.dtype));
  }
  if (t.virtual_ranks && cpu::LaunchedByMpi()) {
    return Status::InvalidArgument(
        "--virtual-ranks runs every rank as a thread of this one process: start it without "
        "mpirun");
  }
  if (o.engine == "cuda" && (!t.rank_speed.empty() || !t.microbatch_seqlens.empty())) {
    return Status::InvalidArgument(fmt::format(
        "{} {}: uneven work runs on the cpu engine (the cuda engine runs every rank at full speed "
        "and every microbatch at --seq-len)",
        t.rank_speed.empty() ? "--microbatch-seqlens" : "--rank-speed",
        Printable(t.rank_speed.empty() ? t.microbatch_seqlens : t.rank_speed)));
  }
  if (o.engine == "cpu" && t.virtual_ranks) {
    return Status::InvalidArgument(
        "--virtual-ranks: the cpu engine runs one MPI process per rank (virtual ranks are the "
        "cuda engine's one-GPU mode)");
  }
  return Status::Ok();
}

// The options every rank checks before MPI starts: InvalidArgument naming the option.
Status CheckOptions(const TrainCommandOptions& o) {
  const TrainOptions& t = o.train;
  PIPETTE_RETURN_IF_ERROR(CheckEngineOptions(o));
  if (!(o.tolerance > 0 && o.tolerance < 1)) {
    return Status::InvalidArgument(fmt::format("--tolerance {}: must be in (0, 1)", o.tolerance));
  }
  PIPETTE_RETURN_IF_ERROR(CheckPeerTimeout(t.peer_timeout_s));  // before the watchdog runs
  // -p and --dp are checked against their limits later (PlanTraining): multiply in 64 bits.
  const std::int64_t processes = std::int64_t{t.p} * t.dp;
  if (!cpu::LaunchedByMpi() && processes > 1 && !t.virtual_ranks) {
    return Status::InvalidArgument(fmt::format(
        "-p {} --dp {} needs {} processes, one per rank, but this is a single process; launch it "
        "with mpirun:\n  mpirun -np {} --oversubscribe pipette train ...\n(as root also "
        "--allow-run-as-root)",
        t.p, t.dp, processes, processes));
  }
  return Status::Ok();
}

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
  if (plan.ok()) config = ConfigJson(o, *plan).dump();
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

Result<TrainReport> TrainOnEngine(const TrainCommandOptions& o, const TrainPlan& plan,
                                  Watchdog& dog, const StepCallback& on_step) {
#if PIPETTE_HAS_CUDA_ENGINE
  if (o.engine == "cuda") return TrainOnCuda(o, plan, dog, on_step);
#endif
  return cpu::TrainOnMpi(plan, o.train, dog, on_step);
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
    Result<RunRecorder> r = BeginRecording(o.record, o.engine, ConfigJson(o, plan));
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
  if (text) PrintHeader(o, plan);
  const StepCallback on_step = [&](int step, double loss, double seconds) {
    if (text) PrintStep(plan, step, loss, seconds);
  };
  Result<TrainReport> report = TrainOnEngine(o, plan, dog, on_step);
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
  using namespace pipette::cli;
  CLI::App app{
      "pipette train: real pipeline-parallel training, one MPI process per rank "
      "(mpirun -np P*D pipette train ...)"};
  app.name("pipette train");
  auto options = std::make_shared<TrainCommandOptions>();
  AddTrainOptions(&app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e, "train");
  }
  TakeCsvCountsFromFile(*options);
  try {
    return RunTrain(*options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "pipette train: internal error: {}\n", e.what());
    return kExitFailure;
  }
}
