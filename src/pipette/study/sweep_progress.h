// The progress of a sweep's points (`pipette sweep`) on a stream (standard error): on a terminal
// one line redrawn in place ("[k/N] done, s skipped, f failed, ETA mm:ss"), with invalid and
// failed points kept above it; otherwise one line per point as it ends; quiet (--quiet) only the
// invalid and failed points. Used from the sweep's thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>

#include "pipette/study/sweep_runner.h"
#include "pipette/study/sweep_spec.h"

namespace pipette {

class SweepProgress {
 public:
  // `total` points to run; `terminal`: whether progress is drawn in place (ProgressWanted);
  // `quiet`: neither the line nor the points that ran.
  SweepProgress(std::size_t total, std::FILE* out, bool terminal, bool quiet = false);

  // Point `point` ended as `r`.
  void Finished(const SweepPoint& point, const PointResult& r);
  // Redraws the progress line (terminal only).
  void Draw();
  // Ends the progress line (terminal only).
  void End();

 private:
  std::size_t total_;
  std::FILE* out_;
  bool terminal_;
  bool quiet_;
  std::chrono::steady_clock::time_point start_;
  std::size_t finished_ = 0, skipped_ = 0, failed_ = 0;
};

}  // namespace pipette
