// `pipette sweep SPEC.toml [--db FILE] [-j N] [--dry-run] [--shard K/N|auto] [--figures-only]
// [--quiet]`:
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
#include "cli/sweep_command.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_launcher.h"
#include "cli/run_store.h"
#include "pipette/common/printable.h"
#include "pipette/common/progress_line.h"
#include "pipette/store/experiment_db.h"
#include "pipette/study/sweep_followups.h"
#include "pipette/study/sweep_progress.h"
#include "pipette/study/sweep_runner.h"
#include "pipette/study/sweep_shard.h"
#include "pipette/study/sweep_spec.h"

namespace pipette::cli {
namespace {

using Clock = std::chrono::steady_clock;

int SweepFail(const Status& status) { return ReportError("sweep", status); }

void Note(const std::string& line) { fmt::print(stderr, "pipette sweep: {}\n", line); }

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

// Point `point`'s child: `pipette simulate ARGS` (this binary), or for `train` points
// `mpirun -np P*DP [--oversubscribe] [--allow-run-as-root] pipette-train ARGS` (cli/mpi_launcher.h,
// as `pipette calibrate` launches itself).
ChildCommand ChildOf(const SweepSpec& spec, const SweepOptions& o, const SweepPoint& point) {
  std::vector<std::string> args = PointArguments(point);
  // --quiet: a child's progress line would land in the message the sweep reports for it.
  for (const char* a : {"--db", o.db.c_str(), "--experiment", spec.name.c_str(), "--point-key",
                        point.key.c_str(), "--format", "json", "--quiet"}) {
    args.emplace_back(a);
  }
  if (spec.command == "train") {
    return {MpirunProgram(), MpirunArguments(TrainProcesses(point), UsableCores(), geteuid() == 0,
                                             SiblingBinary("pipette-train"), args)};
  }
  args.insert(args.begin(), {"pipette", spec.command});
  return {kSelfBinary, std::move(args)};
}

// Runs the points `todo` (indices into `points`), o.jobs at a time; returns each one's result.
std::vector<PointResult> RunPoints(const SweepSpec& spec, const SweepOptions& o,
                                   const std::vector<SweepPoint>& points,
                                   const std::vector<std::size_t>& todo) {
  std::vector<ChildCommand> children;
  for (const std::size_t k : todo) children.push_back(ChildOf(spec, o, points[k]));
  SweepProgress progress(todo.size(), stderr, ProgressWanted(o.quiet), o.quiet);
  progress.Draw();
  std::vector<PointResult> results = RunChildren(
      children, o.jobs,
      [&](std::size_t slot, const PointResult& r) { progress.Finished(points[todo[slot]], r); },
      [&] { progress.Draw(); });
  progress.End();
  return results;
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
  if (!spec.ok()) return SweepFail(spec.status());
  const CLI::App* command =
      app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == spec->command; })
          .front();
  Status checked = CheckSweepOptions(*spec, OptionsOf(*command));
  if (!checked.ok()) return SweepFail(checked);
  Result<std::vector<SweepPoint>> sharded = ShardPoints(o, ExpandPoints(*spec));
  if (!sharded.ok()) return SweepFail(sharded.status());
  const std::vector<SweepPoint>& points = *sharded;
  if (o.dry_run) return DryRun(*spec, o, points);

  Result<ExperimentDb> db = ExperimentDb::Open(o.db);
  if (!db.ok()) return SweepFail(db.status());
  Result<std::int64_t> experiment = db->EnsureExperiment(spec->name, spec->description, spec->text);
  if (!experiment.ok()) return SweepFail(experiment.status());
  std::vector<std::size_t> todo;
  std::size_t already = 0;
  for (std::size_t k = 0; k < points.size(); ++k) {
    Result<std::optional<std::int64_t>> run = db->FindFinishedRun(*experiment, points[k].key);
    if (!run.ok()) return SweepFail(run.status());
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
                     : PredictMeasuredPoints(*spec, o.db, *db, *experiment, points, Note);
  // A shard holds a share of the points: its figures would be partial (drawn after the merge).
  const FigureCounts figures =
      o.shard.empty()
          ? DrawFigures(*spec, o.db, HasSubcommand(app, "plot"), *db, *experiment, points, Note)
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
  cmd->add_flag("--quiet", o->quiet,
                "No progress line and no line per point that ran (invalid and failed points are "
                "still reported)");
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
