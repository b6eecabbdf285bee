// `pipette sweep SPEC.toml [--db FILE] [-j N] [--dry-run] [--shard K/N|auto] [--figures-only]`:
// runs every point of a study
// (docs/experiments.md) as a `pipette simulate` child process (or, for `command = "train"`, an
// `mpirun -np P*DP pipette-train` child: measured runs) recording into the experiment
// database under the spec's experiment, -j at a time; points that already have a finished run are
// skipped, so a sweep resumes where it stopped. Each child claims its point in the database before
// it runs (ExperimentDb::ClaimPoint): a point whose run is finished or still running in a live
// process (a sweep whose parent was killed, a concurrent sweep of the same spec) is reported as
// held and not run again. A point whose child rejects its input (exit 2) is invalid, not a failure.
// At the end each [[figures]] entry is drawn by a `pipette plot` child. With --shard K/N only the
// points i with i mod N = K run, into their own database (study/sweep_shard.h), and no figure is
// drawn (`pipette db merge` the shards, then `--figures-only` draws them from the merged database).
// Points and figures run as children of this binary (/proc/self/exe) because SimGrid allows one
// simulation per process.
#include <fmt/core.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_launcher.h"
#include "cli/run_store.h"
#include "cli/store_options.h"
#include "pipette/common/printable.h"
#include "pipette/common/subprocess.h"
#include "pipette/store/experiment_db.h"
#include "pipette/study/sweep_shard.h"
#include "pipette/study/sweep_spec.h"

namespace pipette::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct SweepOptions {
  std::string spec;
  std::string db = "pipette.db";
  int jobs = 1;
  bool dry_run = false;
  std::string shard;          // "K/N" or "auto"; empty: every point (study/sweep_shard.h)
  bool figures_only = false;  // run no point; draw the figures from the database
};

int Fail(const Status& status) { return ReportError("sweep", status); }

// The binary every child runs: this one.
constexpr const char* kSelf = "/proc/self/exe";

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The options `cmd` accepts, as a spec may name them (without --help).
std::vector<SweepOption> OptionsOf(const CLI::App& cmd) {
  std::vector<SweepOption> options;
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->get_positional() || option == cmd.get_help_ptr()) continue;
    SweepOption o;
    o.names = option->get_lnames();
    for (const std::string& name : option->get_snames()) o.names.push_back(name);
    o.is_flag = option->get_expected_max() == 0;
    options.push_back(std::move(o));
  }
  return options;
}

bool HasSubcommand(const CLI::App& app, const std::string& name) {
  return !app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == name; }).empty();
}

// The last non-empty line of `text`.
std::string LastLine(const std::string& text) {
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const std::size_t newline = text.rfind('\n', end);
  const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end + 1 - begin);
}

std::string MinutesSeconds(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

// A finished point.
struct PointResult {
  enum class Outcome { kRan, kHeld, kInvalid, kFailed } outcome = Outcome::kFailed;
  std::int64_t run_id = 0;  // kHeld: the run that holds the point
  std::string status;       // ok or oom (kRan); the holder's status (kHeld)
  std::string message;      // kInvalid, kFailed: why
  double seconds = 0;
};

PointResult Classify(const Subprocess& child, const ExitStatus& exit, double seconds) {
  PointResult result;
  result.seconds = seconds;
  if (exit.code == kExitOk) {
    const auto json = nlohmann::json::parse(LastLine(child.out()), nullptr, false);
    if (json.is_object() && json.contains("held_by_run") &&
        json["held_by_run"].is_number_integer() && json.contains("held_status") &&
        json["held_status"].is_string()) {
      result.outcome = PointResult::Outcome::kHeld;
      result.run_id = json["held_by_run"].get<std::int64_t>();
      result.status = json["held_status"].get<std::string>();
      return result;
    }
    if (json.is_object() && json.contains("run_id") && json["run_id"].is_number_integer() &&
        json.contains("status") && json["status"].is_string()) {
      result.outcome = PointResult::Outcome::kRan;
      result.run_id = json["run_id"].get<std::int64_t>();
      result.status = json["status"].get<std::string>();
      return result;
    }
    result.message = "exit 0 without a run id in its JSON output: " + LastLine(child.out());
    return result;
  }
  const std::string why = LastLine(child.err());
  if (exit.code == kExitBadInput) {
    result.outcome = PointResult::Outcome::kInvalid;
    result.message = why;
    return result;
  }
  result.message = exit.Describe() + (why.empty() ? "" : ": " + why);
  return result;
}

// Progress on standard error: on a terminal one line redrawn in place, otherwise a line per point.
class Progress {
 public:
  Progress(std::size_t total, bool terminal)
      : total_(total), terminal_(terminal), start_(Clock::now()) {}

  void Finished(const SweepPoint& point, const PointResult& r) {
    ++finished_;
    skipped_ += r.outcome == PointResult::Outcome::kInvalid;
    failed_ += r.outcome == PointResult::Outcome::kFailed;
    std::string line;
    switch (r.outcome) {
      case PointResult::Outcome::kRan:
        line =
            fmt::format("{:<8} run {:<6} {:>7.2f} s  {}", r.status, r.run_id, r.seconds, point.key);
        break;
      case PointResult::Outcome::kHeld:
        line = fmt::format("{:<8} run {:<6} ({}) {}", "held", r.run_id, r.status, point.key);
        break;
      case PointResult::Outcome::kInvalid:
        line = fmt::format("{:<8} {}: {}", "invalid", point.key, r.message);
        break;
      case PointResult::Outcome::kFailed:
        line = fmt::format("{:<8} {}: {}", "FAILED", point.key, r.message);
        break;
    }
    const std::string counter = fmt::format("[{}/{}]", finished_, total_);
    if (!terminal_) {
      fmt::print(stderr, "{} {}\n", counter, line);
    } else if (r.outcome != PointResult::Outcome::kRan) {
      // Invalid and failed points stay on screen above the progress line (redrawn by Draw()).
      fmt::print(stderr, "\r\033[K{} {}\n", counter, line);
    }
  }

  // Redraws the progress line (terminal only).
  void Draw() {
    if (!terminal_) return;
    const double elapsed = SecondsSince(start_);
    const std::string eta =
        finished_ == 0 ? "--:--" : MinutesSeconds(elapsed / finished_ * (total_ - finished_));
    fmt::print(stderr, "\r\033[K[{}/{}] done, {} skipped, {} failed, ETA {}", finished_, total_,
               skipped_, failed_, eta);
    std::fflush(stderr);
  }

  void End() {
    if (terminal_ && total_ > 0) fmt::print(stderr, "\n");
  }

 private:
  std::size_t total_;
  bool terminal_;
  Clock::time_point start_;
  std::size_t finished_ = 0, skipped_ = 0, failed_ = 0;
};

// What a point's child runs: `program` with the argument vector `argv`.
struct ChildCommand {
  std::string program;
  std::vector<std::string> argv;
};

// Point `point`'s child: `pipette simulate ARGS` (this binary), or for `train` points
// `mpirun -np P*DP [--oversubscribe] [--allow-run-as-root] pipette-train ARGS` (cli/mpi_launcher.h,
// as `pipette calibrate` launches itself).
ChildCommand ChildOf(const SweepSpec& spec, const SweepOptions& o, const SweepPoint& point) {
  std::vector<std::string> args = PointArguments(point);
  for (const char* a : {"--db", o.db.c_str(), "--experiment", spec.name.c_str(), "--point-key",
                        point.key.c_str(), "--format", "json"}) {
    args.emplace_back(a);
  }
  if (spec.command == "train") {
    return {MpirunProgram(), MpirunArguments(TrainProcesses(point), UsableCores(), geteuid() == 0,
                                             SiblingBinary("pipette-train"), args)};
  }
  args.insert(args.begin(), {"pipette", spec.command});
  return {kSelf, std::move(args)};
}

// Runs the points `todo` (indices into `points`), o.jobs at a time; returns each one's result.
std::vector<PointResult> RunPoints(const SweepSpec& spec, const SweepOptions& o,
                                   const std::vector<SweepPoint>& points,
                                   const std::vector<std::size_t>& todo) {
  struct Job {
    std::size_t slot;  // index into todo
    Subprocess child;
    Clock::time_point start;
  };
  std::vector<PointResult> results(todo.size());
  Progress progress(todo.size(), ::isatty(STDERR_FILENO) == 1);
  progress.Draw();
  std::vector<std::unique_ptr<Job>> running;
  std::size_t next = 0;
  while (next < todo.size() || !running.empty()) {
    while (running.size() < static_cast<std::size_t>(o.jobs) && next < todo.size()) {
      const std::size_t slot = next++;
      const SweepPoint& point = points[todo[slot]];
      const ChildCommand command = ChildOf(spec, o, point);
      Result<Subprocess> child = Subprocess::Start(command.program, command.argv);
      if (!child.ok()) {
        results[slot].message = child.status().message();
        progress.Finished(point, results[slot]);
        continue;
      }
      running.push_back(std::make_unique<Job>(Job{slot, std::move(*child), Clock::now()}));
    }
    std::vector<pollfd> fds;
    std::vector<Job*> owner;
    for (const auto& job : running) {
      for (const pollfd& fd : job->child.PollFds()) {
        fds.push_back(fd);
        owner.push_back(job.get());
      }
    }
    if (!fds.empty()) {
      const int ready = ::poll(fds.data(), fds.size(), 1000);  // wake each second for the ETA
      if (ready < 0 && errno != EINTR) {
        fmt::print(stderr, "pipette sweep: poll: {}\n", std::strerror(errno));
        break;  // the Jobs' destructors kill and reap the children
      }
      for (std::size_t k = 0; k < fds.size(); ++k) {
        if (fds[k].revents != 0) owner[k]->child.Transfer(fds[k].fd);
      }
    }
    for (auto it = running.begin(); it != running.end();) {
      Job& job = **it;
      if (!job.child.done()) {
        ++it;
        continue;
      }
      const ExitStatus exit = job.child.Wait();
      results[job.slot] = Classify(job.child, exit, SecondsSince(job.start));
      progress.Finished(points[todo[job.slot]], results[job.slot]);
      it = running.erase(it);
    }
    progress.Draw();
  }
  progress.End();
  return results;
}

// The path of a figure: relative to the spec's directory unless absolute.
std::string FigurePath(const SweepSpec& spec, const SweepFigure& figure) {
  const std::filesystem::path out(figure.out);
  if (out.is_absolute()) return out.string();
  return (std::filesystem::path(spec.path).parent_path() / out).lexically_normal().string();
}

struct FigureCounts {
  int drawn = 0, skipped = 0, failed = 0;
};

FigureCounts DrawFigures(const SweepSpec& spec, const SweepOptions& o, bool have_plot,
                         ExperimentDb& db, std::int64_t experiment_id,
                         const std::vector<SweepPoint>& points) {
  FigureCounts counts;
  for (const SweepFigure& figure : spec.figures) {
    const std::string out = FigurePath(spec, figure);
    if (!have_plot) {
      fmt::print(stderr,
                 "pipette sweep: warning: {} figure {} not drawn: this pipette has no `plot` "
                 "command yet\n",
                 figure.kind, out);
      ++counts.skipped;
      continue;
    }
    std::string ids;
    for (const SweepPoint& point : points) {
      if (!FigureSelects(figure, point)) continue;
      Result<std::optional<std::int64_t>> run = db.FindFinishedRun(experiment_id, point.key);
      if (!run.ok() || !*run) continue;
      ids += (ids.empty() ? "" : ",") + std::to_string(**run);
      if (!spec.predict) continue;
      run = db.FindFinishedRun(experiment_id, point.key + std::string(kPredictedKeySuffix));
      if (run.ok() && *run) ids += "," + std::to_string(**run);
    }
    if (ids.empty()) {
      fmt::print(stderr, "pipette sweep: warning: {} figure {} not drawn: no finished run\n",
                 figure.kind, out);
      ++counts.skipped;
      continue;
    }
    std::vector<std::string> args{"pipette", "plot", figure.kind, "--db", o.db,
                                  "--run",   ids,    "--out",     out};
    if (!figure.x.empty()) args.insert(args.end(), {"--x", figure.x});
    Result<Subprocess> plot = Subprocess::Run(kSelf, args);
    if (plot.ok() && plot->Wait().code == kExitOk) {
      fmt::print(stderr, "pipette sweep: drew {} figure {}\n", figure.kind, out);
      ++counts.drawn;
      continue;
    }
    const std::string why = plot.ok() ? plot->Wait().Describe() + ": " + LastLine(plot->err())
                                      : plot.status().message();
    fmt::print(stderr, "pipette sweep: warning: {} figure {} failed: {}\n", figure.kind, out, why);
    ++counts.failed;
  }
  return counts;
}

int DryRun(const SweepSpec& spec, const SweepOptions& o, const std::vector<SweepPoint>& points) {
  // Reading never creates the database.
  std::vector<std::optional<std::int64_t>> done(points.size());
  std::error_code error;
  if (std::filesystem::exists(o.db, error)) {
    Result<ExperimentDb> db = OpenExistingDb(o.db);
    if (!db.ok()) return Fail(db.status());
    Result<std::optional<std::int64_t>> experiment = db->FindExperiment(spec.name);
    if (!experiment.ok()) return Fail(experiment.status());
    for (std::size_t k = 0; *experiment && k < points.size(); ++k) {
      Result<std::optional<std::int64_t>> run = db->FindFinishedRun(**experiment, points[k].key);
      if (!run.ok()) return Fail(run.status());
      done[k] = *run;
    }
  }
  const auto finished = std::count_if(done.begin(), done.end(), [](const auto& d) { return d; });
  fmt::print("# sweep {} ({}): {} points, {} done, {} to run; db {}\n", spec.name, spec.path,
             points.size(), finished, points.size() - finished, o.db);
  fmt::print(
      "# each point runs: {}pipette {} <point's settings> --db {} --experiment {} "
      "--point-key KEY --format json\n",
      spec.command == "train" ? "mpirun -np P*DP " : "", spec.command, o.db, spec.name);
  fmt::print("#  point  status      point key\n");
  for (std::size_t k = 0; k < points.size(); ++k) {
    const std::string status = done[k] ? fmt::format("done {}", *done[k]) : "to run";
    fmt::print("{:>8}  {:<10}  {}\n", k + 1, status, points[k].key);
  }
  for (const SweepFigure& figure : spec.figures) {
    const auto selected = std::count_if(points.begin(), points.end(), [&](const SweepPoint& p) {
      return FigureSelects(figure, p);
    });
    fmt::print("# figure {} {} from {} point{}\n", figure.kind, FigurePath(spec, figure), selected,
               selected == 1 ? "" : "s");
  }
  return kExitOk;
}

struct PredictionCounts {
  int ran = 0, already = 0, held = 0, failed = 0;
};

// Fidelity studies (predict = true): every measured point with a finished run gets its prediction,
// `pipette simulate --costs-from RUN [--calibration C]`, recorded in the experiment at the point's
// key plus kPredictedKeySuffix (one per point: an existing finished one is kept).
PredictionCounts PredictMeasuredPoints(const SweepSpec& spec, const SweepOptions& o,
                                       ExperimentDb& db, std::int64_t experiment_id,
                                       const std::vector<SweepPoint>& points) {
  PredictionCounts counts;
  if (!spec.predict) return counts;
  for (const SweepPoint& point : points) {
    Result<std::optional<std::int64_t>> measured = db.FindFinishedRun(experiment_id, point.key);
    if (!measured.ok() || !*measured) continue;
    const std::string key = point.key + std::string(kPredictedKeySuffix);
    Result<std::optional<std::int64_t>> predicted = db.FindFinishedRun(experiment_id, key);
    if (predicted.ok() && *predicted) {
      ++counts.already;
      continue;
    }
    std::vector<std::string> args{
        "pipette",     "simulate", "--costs-from", std::to_string(**measured),
        "--db",        o.db,       "--experiment", spec.name,
        "--point-key", key,        "--format",     "json"};
    if (!spec.calibration.empty()) args.insert(args.end(), {"--calibration", spec.calibration});
    Result<Subprocess> child = Subprocess::Run(kSelf, args);
    if (child.ok() && child->Wait().code == kExitOk) {
      // A prediction another sweep holds (exit 0, JSON naming the holder) did not run here.
      const bool held = nlohmann::json::parse(child->out(), nullptr, false).contains("held_by_run");
      ++(held ? counts.held : counts.ran);
      continue;
    }
    ++counts.failed;
    const std::string why = child.ok() ? child->Wait().Describe() + ": " + LastLine(child->err())
                                       : child.status().message();
    fmt::print(stderr, "pipette sweep: warning: the prediction of run {} ({}) failed: {}\n",
               **measured, Printable(point.key), why);
  }
  return counts;
}

// With --shard: this shard's points (point i of `points` when i mod N = K) and its database
// (ShardDatabasePath) in `o.db`; a note on standard error says which. Without: `points`.
Result<std::vector<SweepPoint>> ShardPoints(SweepOptions& o, std::vector<SweepPoint> points) {
  if (o.shard.empty()) return points;
  PIPETTE_ASSIGN_OR_RETURN(const SweepShard shard, ParseShardOption(o.shard, ProcessEnvironment()));
  const std::size_t total = points.size();
  std::vector<SweepPoint> mine;
  for (std::size_t i = 0; i < total; ++i) {
    if (shard.Holds(i)) mine.push_back(std::move(points[i]));
  }
  o.db = ShardDatabasePath(o.db, shard);
  fmt::print(stderr,
             "pipette sweep: shard {}/{}: {} of {} points (point i when i mod {} = {}) into {}; "
             "figures are drawn after `pipette db merge`\n",
             shard.index, shard.count, mine.size(), total, shard.count, shard.index,
             Printable(o.db));
  return mine;
}

int Run(const CLI::App& app, SweepOptions o) {
  const Clock::time_point start = Clock::now();
  Result<SweepSpec> spec = LoadSweepSpec(o.spec);
  if (!spec.ok()) return Fail(spec.status());
  const CLI::App* command =
      app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == spec->command; })
          .front();
  Status checked = CheckSweepOptions(*spec, OptionsOf(*command));
  if (!checked.ok()) return Fail(checked);
  Result<std::vector<SweepPoint>> sharded = ShardPoints(o, ExpandPoints(*spec));
  if (!sharded.ok()) return Fail(sharded.status());
  const std::vector<SweepPoint>& points = *sharded;
  if (o.dry_run) return DryRun(*spec, o, points);

  Result<ExperimentDb> db = ExperimentDb::Open(o.db);
  if (!db.ok()) return Fail(db.status());
  Result<std::int64_t> experiment = db->EnsureExperiment(spec->name, spec->description, spec->text);
  if (!experiment.ok()) return Fail(experiment.status());
  std::vector<std::size_t> todo;
  std::size_t already = 0;
  for (std::size_t k = 0; k < points.size(); ++k) {
    Result<std::optional<std::int64_t>> run = db->FindFinishedRun(*experiment, points[k].key);
    if (!run.ok()) return Fail(run.status());
    already += run->has_value();
    if (!*run && !o.figures_only) todo.push_back(k);
  }
  fmt::print(stderr, "pipette sweep: {}: {} points, {} already done, running {} with -j {}\n",
             spec->name, points.size(), already, todo.size(), o.jobs);
  const std::vector<PointResult> results = RunPoints(*spec, o, points, todo);
  std::size_t ok = 0, oom = 0, held = 0, invalid = 0, failed = 0;
  for (const PointResult& r : results) {
    switch (r.outcome) {
      case PointResult::Outcome::kRan:
        (r.status == "oom" ? oom : ok) += 1;
        break;
      case PointResult::Outcome::kHeld:
        ++held;
        break;
      case PointResult::Outcome::kInvalid:
        ++invalid;
        break;
      case PointResult::Outcome::kFailed:
        ++failed;
        break;
    }
  }
  const PredictionCounts predicted =
      o.figures_only ? PredictionCounts{}
                     : PredictMeasuredPoints(*spec, o, *db, *experiment, points);
  // A shard holds a share of the points: its figures would be partial (drawn after the merge).
  const FigureCounts figures =
      o.shard.empty() ? DrawFigures(*spec, o, HasSubcommand(app, "plot"), *db, *experiment, points)
                      : FigureCounts{0, static_cast<int>(spec->figures.size()), 0};

  fmt::print("# pipette sweep {}: experiment '{}' in {}\n", Printable(spec->path), spec->name,
             Printable(o.db));
  if (!spec->description.empty()) fmt::print("# {}\n", spec->description);
  fmt::print("points        {:>6}\n", points.size());
  fmt::print("already done  {:>6}\n", already);
  fmt::print("ran           {:>6}   (ok {}, oom {})\n", ok + oom, ok, oom);
  fmt::print("held          {:>6}   (another process ran or runs the point: not run again)\n",
             held);
  fmt::print("invalid       {:>6}   (the command rejected the point's settings)\n", invalid);
  fmt::print("failed        {:>6}\n", failed);
  if (spec->predict) {
    fmt::print(
        "predicted     {:>6}   (already {}, held {}, failed {}; simulate --costs-from each "
        "measured run)\n",
        predicted.ran, predicted.already, predicted.held, predicted.failed);
  }
  fmt::print("figures       {:>6}   drawn ({} not drawn, {} failed)\n", figures.drawn,
             figures.skipped, figures.failed);
  fmt::print("wall_time     {:>6.1f} s\n", SecondsSince(start));
  return failed > 0 || figures.failed > 0 || predicted.failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace

void RegisterSweepCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run every point of a study (experiments/NAME.toml) and draw its figures");
  cmd->add_option("spec", o->spec, "The study's TOML spec (docs/experiments.md)")->required();
  cmd->add_option("--db", o->db, "Experiment database (SQLite)")
      ->capture_default_str()
      ->check(DatabasePathValidator());
  cmd->add_option("-j,--jobs", o->jobs, "Points run in parallel (child processes)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--dry-run", o->dry_run, "List the points (and which are done) without running");
  CLI::Option* shard = cmd->add_option(
      "--shard", o->shard,
      "Run only shard K of N (K/N: points i with i mod N = K), or 'auto' (K and N from "
      "a Slurm job array or mpirun), into --db with .shard-K-of-N before its extension; "
      "no figures (merge with `pipette db merge`)");
  CLI::Option* figures_only = cmd->add_flag(
      "--figures-only", o->figures_only,
      "Run no point: draw the figures from the finished runs (after `pipette db merge`)");
  figures_only->excludes(shard);
  cmd->callback([&app, o, &exit_code] { exit_code = Run(app, *o); });
}

}  // namespace pipette::cli
