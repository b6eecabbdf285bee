// pipette-calibrate, the binary behind `pipette calibrate` (which execs it: MPI stays out of the
// main binary, as for pipette-train).
//
// `pipette calibrate --engine cpu [--ranks N] [--db FILE | --no-db] [--repeats R] [--max-bytes B]
//  [--gemm-max G] [--cluster-out FILE.toml] [--format text|json] [--list]`: measures what the
// simulator needs beyond compute on this machine (backends/cpu/calibrate.h: p2p message time
// against size, the all-reduce over N ranks, the engine's overhead per instruction, one core's
// sgemm rate alone and contended, its time per GEMM over a grid of shapes up to G, the copy
// bandwidth), fits seconds = alpha + beta * bytes to the p2p and all-reduce
// points, records the calibration in the database (engine/calibration.h) and prints it with its id.
// Started outside mpirun it checks its options, opens the database and replaces itself with
// `mpirun -np N pipette-calibrate ...` (N: --ranks, default the usable cores, at least 2), so one
// command from a shell does it all. Rank 0 measures, prints and records; the others take part.
#include <cblas.h>
#include <fmt/core.h>
#include <mpi.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/exit_code.h"
#include "cli/mpi_launcher.h"
#include "cli/option_checks.h"
#include "cli/run_store.h"
#include "cpu/blas_kernel.h"
#include "cpu/calibrate.h"
#include "cpu/mpi_launch.h"
#include "pipette/common/host_machine.h"
#include "pipette/common/printable.h"
#include "pipette/common/replacing_file.h"
#include "pipette/report/calibration_report.h"
#include "pipette/store/db_access.h"
#include "pipette/store/experiment_db.h"

namespace pipette::cli {
namespace {

constexpr std::int64_t kLargestMaxBytes = std::int64_t{1} << 30;
constexpr int kMaxRanks = 4096;
constexpr std::int64_t kLargestGemmMax = 4096;

struct CalibrateOptions {
  std::string engine = "cpu";
  int ranks = 0;  // 0: the usable cores, at least 2
  std::string db = "pipette.db";
  bool no_db = false;
  int repeats = 20;
  std::int64_t max_bytes = cpu::CalibrationRequest{}.max_bytes;
  std::int64_t gemm_max = cpu::CalibrationRequest{}.gemm_max;
  std::string cluster_out;
  std::string format = "text";
  bool list = false;
  int cores = 0;  // 0: this process's usable cores
  CLI::Option* ranks_option = nullptr;
  CLI::Option* cores_option = nullptr;
};

int Fail(const Status& status) { return ReportError("calibrate", status); }

// The checks CLI11 does not make: InvalidArgument naming the option, the value and the rule.
Status CheckOptions(const CalibrateOptions& o) {
  if (o.ranks_option->count() > 0 && (o.ranks < 2 || o.ranks > kMaxRanks)) {
    return Status::InvalidArgument(
        fmt::format("--ranks = {}: needs at least 2 processes (the p2p ping-pong runs between "
                    "ranks 0 and 1) and at most {} (all on this machine)",
                    o.ranks, kMaxRanks));
  }
  if (o.gemm_max != 0 &&
      (o.gemm_max < 16 || o.gemm_max > kLargestGemmMax || (o.gemm_max & (o.gemm_max - 1)) != 0)) {
    return Status::InvalidArgument(fmt::format(
        "--gemm-max = {}: the GEMM table's largest size is a power of two from 16 to {} (its "
        "sizes are the powers of two from 16 up to it), or 0 for no table",
        o.gemm_max, kLargestGemmMax));
  }
  const double gemm_seconds = cpu::EstimateGemmTableSeconds(GemmTableSizes(o.gemm_max),
                                                            cpu::CalibrationRequest{}.gemm_repeats);
  if (const double seconds = cpu::EstimateCalibrationSeconds(o.repeats, o.max_bytes) + gemm_seconds;
      !o.list && seconds > cpu::kMaxCalibrationSeconds) {
    return Status::InvalidArgument(fmt::format(
        "--repeats = {} --max-bytes = {} --gemm-max = {}: would take about {:.1f} h (each repeat "
        "moves about 8 x --max-bytes at about 3 GB/s; the GEMM table {:.0f} s), more than the "
        "limit of {:.0f} min: give fewer --repeats, a smaller --max-bytes or --gemm-max",
        o.repeats, o.max_bytes, o.gemm_max, seconds / 3600, gemm_seconds,
        cpu::kMaxCalibrationSeconds / 60));
  }
  if (!o.cluster_out.empty() && !o.cluster_out.ends_with(".toml")) {
    return Status::InvalidArgument(
        fmt::format("--cluster-out = '{}': a cluster file's name ends in .toml (pipette simulate "
                    "--cluster reads it by that ending)",
                    Printable(o.cluster_out)));
  }
  return Status::Ok();
}

int List(const CalibrateOptions& o) {
  Result<ExperimentDb> db = OpenExistingDb(o.db);
  if (!db.ok()) return Fail(db.status());
  Result<std::vector<Calibration>> all = db->ListCalibrations();
  if (!all.ok()) return Fail(all.status());
  if (o.format == "json") {
    nlohmann::ordered_json json = nlohmann::ordered_json::array();
    for (const Calibration& c : *all) json.push_back(CalibrationJson(c));
    std::cout << json.dump() << std::endl;
  } else {
    PrintCalibrationList(*all);
  }
  return kExitOk;
}

// InvalidArgument unless --cluster-out's directory exists (checked before anything is measured or
// recorded; the file itself is written at the end).
Status CheckClusterOutDirectory(const std::string& out) {
  if (out.empty()) return Status::Ok();
  const std::filesystem::path parent = std::filesystem::path(out).parent_path();
  std::error_code error;
  if (parent.empty() || std::filesystem::is_directory(parent, error)) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("--cluster-out = '{}': the directory '{}' does not exist", Printable(out),
                  Printable(parent.string())));
}

// Outside mpirun: check what can be checked once, then become `mpirun -np N pipette-calibrate`.
int Launch(const CalibrateOptions& o, int argc, char** argv) {
  if (Status checked = CheckClusterOutDirectory(o.cluster_out); !checked.ok()) return Fail(checked);
  const int cores = o.cores > 0 ? o.cores : UsableCores();
  const int np = o.ranks > 0 ? o.ranks : std::max(2, cores);
  if (!o.no_db) {
    Result<ExperimentDb> db = ExperimentDb::Open(o.db);  // creates or migrates it, or fails now
    if (!db.ok()) return Fail(db.status());
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  if (o.cores_option->count() == 0) args.push_back(fmt::format("--cores={}", cores));
  if (o.ranks_option->count() == 0) args.push_back(fmt::format("--ranks={}", np));
  return ExecProgram(
      "calibrate", MpirunProgram(),
      MpirunArguments(np, cores, geteuid() == 0, SiblingBinary("pipette-calibrate"), args));
}

// Rank 0: records, writes the cluster file, prints. Returns the exit code.
int Finish(const CalibrateOptions& o, Calibration& c) {
  c.host = HostName();
  c.created_at = UtcNow();
  if (!o.no_db) {
    Result<ExperimentDb> db = ExperimentDb::Open(o.db);
    if (!db.ok()) return Fail(db.status());
    Result<std::int64_t> id = db->RecordCalibration(c);
    if (!id.ok()) return Fail(id.status());
    c.id = *id;
  }
  if (!o.cluster_out.empty()) {
    ReplacingFile file(o.cluster_out);  // complete or not there
    std::ofstream out(file.write_path());
    out << HostClusterToml(c);
    out.close();
    if (!out) {
      return Fail(Status::IoError(fmt::format("--cluster-out = '{}': cannot write the file: {}",
                                              Printable(o.cluster_out), std::strerror(errno))));
    }
    if (Status moved = file.Commit(); !moved.ok()) return Fail(moved);
  }
  if (o.format == "json") {
    nlohmann::ordered_json json = CalibrationJson(c);
    if (!o.no_db) json["db"] = o.db;
    if (!o.cluster_out.empty()) json["cluster_out"] = o.cluster_out;
    json["blas"] = pipette::cpu::BlasKernelNote();
    std::cout << json.dump() << std::endl;
    return kExitOk;
  }
  PrintCalibration(c);
  fmt::print("# {}\n", pipette::cpu::BlasKernelNote());
  if (!o.cluster_out.empty()) fmt::print("# cluster file {}\n", Printable(o.cluster_out));
  if (!o.no_db) fmt::print("# recorded as calibration {} in {}\n", c.id, Printable(o.db));
  return kExitOk;
}

int RunUnderMpi(const CalibrateOptions& o) {
  openblas_set_num_threads(1);  // one core per rank, as pipette train
  MPI_Init(nullptr, nullptr);
  int rank = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  auto finish = [](int code) {
    MPI_Finalize();
    return code;
  };
  if (world < 2 || (o.ranks > 0 && world != o.ranks)) {
    const Status wrong = Status::InvalidArgument(fmt::format(
        "mpirun started {} processes but calibrate needs {} (--ranks; at least 2): run it "
        "without mpirun and it launches them itself",
        world, o.ranks > 0 ? o.ranks : 2));
    return finish(rank == 0 ? Fail(wrong) : kExitBadInput);
  }
  Calibration c = cpu::MeasureCalibration(
      {.repeats = o.repeats, .max_bytes = o.max_bytes, .cores = o.cores, .gemm_max = o.gemm_max},
      MPI_COMM_WORLD);
  return finish(rank == 0 ? Finish(o, c) : kExitOk);
}

void AddOptions(CLI::App& app, CalibrateOptions& o) {
  app.add_option("--engine", o.engine, "Engine to calibrate")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu"}));
  o.ranks_option =
      app.add_option("--ranks", o.ranks, "MPI processes (default: the usable cores, at least 2)");
  app.add_option("--db", o.db, "Experiment database (SQLite) the calibration is recorded in")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  app.add_flag("--no-db", o.no_db, "Do not record the calibration");
  app.add_option("--repeats", o.repeats, "Repeats of every measurement (the median is kept)")
      ->capture_default_str()
      ->check(InRange(1, 10000, "the median of the repeats is kept"));
  app.add_option("--max-bytes", o.max_bytes,
                 "Largest message and all-reduce (sizes 0 and 4, 8, ... up to it)")
      ->capture_default_str()
      ->check(InRange(4, kLargestMaxBytes, "messages are floats, 4 bytes each; at most 1 GiB"));
  app.add_option("--gemm-max", o.gemm_max,
                 "The GEMM table's largest size: m, n, k the powers of two from 16 to it (0: none)")
      ->capture_default_str();
  app.add_option("--cluster-out", o.cluster_out,
                 "Also write a cluster file (.toml) for this machine (docs/clusters.md)")
      ->check(OutputPath());
  app.add_option("--format", o.format, "Output format")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  o.cores_option =
      app.add_option("--cores", o.cores,
                     "Usable cores of the machine (default: sched_getaffinity of this process)")
          ->check(AtLeast(1));
  // --list measures nothing: the options of a measurement would be taken silently.
  CLI::Option* list = app.add_flag(
      "--list", o.list, "List the calibrations in --db instead (as pipette calibrations)");
  for (const char* measuring : {"--ranks", "--repeats", "--max-bytes", "--gemm-max",
                                "--cluster-out", "--cores", "--no-db", "--engine"}) {
    list->excludes(app.get_option(measuring));
  }
  app.get_option("--no-db")->excludes(app.get_option("--db"));
}

}  // namespace
}  // namespace pipette::cli

#if defined(__SANITIZE_ADDRESS__)
// As pipette-train: OpenMPI 4.1 leaves its own allocations behind at exit.
extern "C" int __lsan_is_turned_off() { return 1; }
#endif

int main(int argc, char** argv) {
  pipette::cpu::EnsureBlasKernel(argv);  // may execute this program again, before MPI starts
  pipette::cli::IgnoreFileSizeSignal();
  using namespace pipette::cli;
  using pipette::kExitFailure;
  CLI::App app{
      "pipette calibrate: measure this machine for the simulator (p2p and all-reduce times, the "
      "engine's overhead per instruction, sgemm rates) and record a calibration"};
  app.name("pipette calibrate");
  CalibrateOptions options;
  AddOptions(app, options);
  pipette::cli::RequireWellFormedValues(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return FinishOutput("calibrate", ReportParseError(app, e, "calibrate"));
  }
  try {
    if (pipette::Status checked = CheckOptions(options); !checked.ok()) return Fail(checked);
    if (options.list) return FinishOutput("calibrate", List(options));
    if (!pipette::cpu::LaunchedByMpi()) return Launch(options, argc, argv);
    return FinishOutput("calibrate", RunUnderMpi(options));
  } catch (const std::exception& e) {
    fmt::print(stderr, "pipette calibrate: internal error: {}\n", e.what());
    return kExitFailure;
  }
}
