#include "pipette/store/run_recorder.h"

#include <fmt/core.h>

#include <utility>
#include <vector>

namespace pipette {

TraceLevel TraceLevelOf(std::string_view name) {
  if (name == "none") return TraceLevel::kNone;
  if (name == "summary") return TraceLevel::kSummary;
  return TraceLevel::kFull;
}

Result<RunRecorder> RunRecorder::Begin(const RecordTarget& target, RunRecord run) {
  RunRecorder recorder;
  recorder.level_ = target.trace;
  PIPETTE_ASSIGN_OR_RETURN(ExperimentDb db, ExperimentDb::Open(target.db));
  recorder.db_ = std::make_unique<ExperimentDb>(std::move(db));
  recorder.path_ = target.db;
  if (!target.experiment.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(run.experiment_id,
                             recorder.db_->EnsureExperiment(target.experiment, "", ""));
  }
  if (target.point_key.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(recorder.run_id_, recorder.db_->BeginRun(run));
    return recorder;
  }
  PIPETTE_ASSIGN_OR_RETURN(PointClaim claim, recorder.db_->ClaimPoint(run, target.point_key));
  if (claim.claimed) {
    recorder.run_id_ = claim.run_id;
  } else {
    recorder.db_.reset();
    recorder.held_ = claim;
  }
  return recorder;
}

RunRecorder::RunRecorder(RunRecorder&& other) noexcept
    : db_(std::move(other.db_)),
      run_id_(other.run_id_),
      path_(std::move(other.path_)),
      level_(other.level_),
      finished_(other.finished_),
      held_(std::move(other.held_)) {}

RunRecorder& RunRecorder::operator=(RunRecorder&& other) noexcept {
  if (this != &other) {
    FailUnfinished();
    db_ = std::move(other.db_);
    run_id_ = other.run_id_;
    path_ = std::move(other.path_);
    level_ = other.level_;
    finished_ = other.finished_;
    held_ = std::move(other.held_);
  }
  return *this;
}

RunRecorder::~RunRecorder() { FailUnfinished(); }

void RunRecorder::FailUnfinished() {
  if (!enabled() || finished_) return;
  (void)Fail("pipette ended before finishing the run (an error or exception after it began)");
}

namespace {

// The rows the trace level keeps.
void KeepLevel(TraceLevel level, RunData& data) {
  if (level == TraceLevel::kNone) {
    data.events.clear();
    data.memory.clear();
  } else if (level == TraceLevel::kSummary) {
    std::erase_if(data.events, [](const EventRow& e) {
      return e.kind != EventKind::kAllReduce && e.kind != EventKind::kOptimizer;
    });
  }
}

}  // namespace

Status RunRecorder::RecordStep(RunData step_rows, int steps_recorded) {
  if (!enabled() || finished_) return Status::Ok();
  KeepLevel(level_, step_rows);
  return db_->RecordStep(run_id_, step_rows, steps_recorded);
}

Status RunRecorder::Finish(RunData data, std::string_view status) {
  if (!enabled()) return Status::Ok();
  KeepLevel(level_, data);
  Status written = db_->FinishRun(run_id_, data, status);
  finished_ = true;
  if (!written.ok()) {
    (void)db_->FailRun(run_id_, fmt::format("recording the run failed: {}", written.message()));
  }
  return written;
}

Status RunRecorder::Fail(std::string_view error) {
  if (!enabled()) return Status::Ok();
  finished_ = true;
  return db_->FailRun(run_id_, error);
}

}  // namespace pipette
