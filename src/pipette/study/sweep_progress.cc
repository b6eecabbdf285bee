#include "pipette/study/sweep_progress.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace pipette {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string MinutesSeconds(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

}  // namespace

SweepProgress::SweepProgress(std::size_t total, std::FILE* out, bool terminal, bool quiet)
    : total_(total),
      out_(out),
      terminal_(terminal && !quiet),
      quiet_(quiet),
      start_(std::chrono::steady_clock::now()) {}

void SweepProgress::Finished(const SweepPoint& point, const PointResult& r) {
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
  const bool ran =
      r.outcome == PointResult::Outcome::kRan || r.outcome == PointResult::Outcome::kHeld;
  if (quiet_ && ran) return;
  if (!terminal_) {
    fmt::print(out_, "{} {}\n", counter, line);
  } else if (r.outcome != PointResult::Outcome::kRan) {
    // Invalid and failed points stay on screen above the progress line (redrawn by Draw()).
    fmt::print(out_, "\r\033[K{} {}\n", counter, line);
  }
}

void SweepProgress::Draw() {
  if (!terminal_) return;
  const double elapsed = SecondsSince(start_);
  const std::string eta =
      finished_ == 0 ? "--:--" : MinutesSeconds(elapsed / finished_ * (total_ - finished_));
  fmt::print(out_, "\r\033[K[{}/{}] done, {} skipped, {} failed, ETA {}", finished_, total_,
             skipped_, failed_, eta);
  std::fflush(out_);
}

void SweepProgress::End() {
  if (terminal_ && total_ > 0) fmt::print(out_, "\n");
}

}  // namespace pipette
