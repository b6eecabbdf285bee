// A sweep's progress: one line per point when not drawn in place; on a terminal the line redrawn
// with invalid and failed points kept above it; --quiet only the invalid and failed points.
#include "pipette/study/sweep_progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace pipette {
namespace {

std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) out += static_cast<char>(c);
  return out;
}

// Three points: one ran, one invalid, one failed; what `progress` wrote to `f`.
std::string ThreePoints(bool terminal, bool quiet) {
  std::FILE* f = std::tmpfile();
  SweepProgress progress(3, f, terminal, quiet);
  PointResult ran{PointResult::Outcome::kRan, 7, "ok", "", 1.5};
  PointResult invalid{PointResult::Outcome::kInvalid, 0, "", "--pp = 0: must be >= 1", 0};
  PointResult failed{PointResult::Outcome::kFailed, 0, "", "killed by signal 9", 0};
  progress.Finished(SweepPoint{{}, "m=4"}, ran);
  progress.Draw();
  progress.Finished(SweepPoint{{}, "m=8"}, invalid);
  progress.Finished(SweepPoint{{}, "m=16"}, failed);
  progress.End();
  const std::string out = Contents(f);
  std::fclose(f);
  return out;
}

TEST(SweepProgress, OneLinePerPointOffATerminal) {
  EXPECT_EQ(ThreePoints(false, false),
            "[1/3] ok       run 7         1.50 s  m=4\n"
            "[2/3] invalid  m=8: --pp = 0: must be >= 1\n"
            "[3/3] FAILED   m=16: killed by signal 9\n");
}

TEST(SweepProgress, OnATerminalTheLineIsRedrawnBelowTheFailures) {
  const std::string out = ThreePoints(true, false);
  EXPECT_NE(out.find("\r\033[K[1/3] done, 0 skipped, 0 failed, ETA "), std::string::npos) << out;
  EXPECT_NE(out.find("\r\033[K[2/3] invalid  m=8: --pp = 0: must be >= 1\n"), std::string::npos);
  EXPECT_EQ(out.find("run 7"), std::string::npos);  // a point that ran only moves the line
  EXPECT_EQ(out.back(), '\n');
}

TEST(SweepProgress, QuietKeepsOnlyInvalidAndFailedPoints) {
  for (bool terminal : {false, true}) {
    EXPECT_EQ(ThreePoints(terminal, true),
              "[2/3] invalid  m=8: --pp = 0: must be >= 1\n"
              "[3/3] FAILED   m=16: killed by signal 9\n")
        << terminal;
  }
}

}  // namespace
}  // namespace pipette
