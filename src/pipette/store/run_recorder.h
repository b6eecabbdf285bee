// RunRecorder: one run of a command recorded into the experiment database (experiment_db.h). It
// opens the database, registers the run as `running` before the work starts (claiming its sweep
// point, if any) and finishes it with its rows afterwards, filtered by the trace level. A
// RunRecorder destroyed before Finish() or Fail() (an error path, an exception) marks its run
// failed, so no error after Begin() leaves a run `running`. Move-only; used from one thread.
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(RunRecorder recorder, RunRecorder::Begin(target, run));
//   ... the work ...
//   PIPETTE_RETURN_IF_ERROR(recorder.Finish(std::move(data), kRunOk));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/store/experiment_db.h"

namespace pipette {

// What a run writes besides its run row and metrics.
enum class TraceLevel {
  kNone,     // metrics only
  kSummary,  // + memory over time per rank and the all-reduce and update events
  kFull,     // + one event per executed instruction
};

// "none", "summary" or "full" (anything else: kFull, the default).
TraceLevel TraceLevelOf(std::string_view name);

// Where and how a run is recorded.
struct RecordTarget {
  std::string db;  // the database file
  TraceLevel trace = TraceLevel::kFull;
  std::string experiment;  // sweeps: the experiment the run belongs to ("" none)
  std::string point_key;   // sweeps: the run's point in it ("" none)
};

class RunRecorder {
 public:
  // Opens target.db and inserts `run` (engine, config, version, revision and libraries set by the
  // caller) as `running`, under target.experiment when there is one. With target.point_key the run
  // claims its point (ExperimentDb::ClaimPoint): when another run holds it, enabled() is false and
  // held() names that run; the caller must not do the work. Errors: the database cannot be opened
  // or written.
  static Result<RunRecorder> Begin(const RecordTarget& target, RunRecord run);

  RunRecorder() = default;  // records nothing (--no-db): enabled() is false
  RunRecorder(RunRecorder&& other) noexcept;
  RunRecorder& operator=(RunRecorder&& other) noexcept;
  ~RunRecorder();  // an unfinished run ends `failed`

  bool enabled() const { return db_ != nullptr; }
  std::int64_t run_id() const { return run_id_; }
  const std::string& path() const { return path_; }
  // The run that holds this run's sweep point, when Begin() could not claim it.
  const std::optional<PointClaim>& held() const { return held_; }

  // Writes the rows of one finished step (filtered by the trace level) in one transaction, as the
  // run goes: a run killed later keeps them (ExperimentDb::RecordStep). Finish() replaces them
  // with the whole run's rows.
  Status RecordStep(RunData step_rows, int steps_recorded);
  // Writes `data` (filtered by the trace level) and the final status in one transaction; if that
  // fails, marks the run failed with the reason (and returns the error).
  Status Finish(RunData data, std::string_view status);
  // Marks the run failed with `error`.
  Status Fail(std::string_view error);

 private:
  void FailUnfinished();

  std::unique_ptr<ExperimentDb> db_;
  std::int64_t run_id_ = 0;
  std::string path_;
  TraceLevel level_ = TraceLevel::kFull;
  bool finished_ = false;
  std::optional<PointClaim> held_;
};

}  // namespace pipette
