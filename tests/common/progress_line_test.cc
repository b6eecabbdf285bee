// The progress line: nothing before `after` or when disabled, redrawn in place at most every
// `interval`, the percentage, the elapsed time and the estimate of the time left, cut to the
// terminal's width, cleared at the end; and who wants it (PIPETTE_PROGRESS, --quiet).
#include "pipette/common/progress_line.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pipette {
namespace {

using std::chrono::milliseconds;

// Everything written to `f` so far.
std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) out += static_cast<char>(c);
  return out;
}

TEST(ProgressLine, DrawsAfterTheDelayAtMostEveryIntervalAndClearsAtTheEnd) {
  ::unsetenv("PIPETTE_PROGRESS_AFTER");
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const auto start = ProgressLine::Clock::now();
  ProgressLine line("pipette train", f, /*enabled=*/true, /*after_s=*/2.0, /*interval_s=*/0.25,
                    start);
  line.Update(1, 4, "1 of 4 steps", start + milliseconds(1000));  // before the delay
  EXPECT_EQ(Contents(f), "");
  EXPECT_FALSE(line.drawn());
  line.Update(1, 4, "1 of 4 steps", start + milliseconds(3000));
  // 1 of 4 in 3 s: 3 left at 3 s each.
  EXPECT_EQ(Contents(f), "\r\033[Kpipette train: 25% (1 of 4 steps), 3 s, about 9 s left");
  EXPECT_TRUE(line.drawn());
  line.Update(2, 4, "2 of 4 steps", start + milliseconds(3100));  // within the interval
  EXPECT_EQ(Contents(f), "\r\033[Kpipette train: 25% (1 of 4 steps), 3 s, about 9 s left");
  line.Update(3, 4, "3 of 4 steps", start + milliseconds(6000));
  EXPECT_EQ(Contents(f),
            "\r\033[Kpipette train: 25% (1 of 4 steps), 3 s, about 9 s left"
            "\r\033[Kpipette train: 75% (3 of 4 steps), 6 s, about 2 s left");
  line.End();
  EXPECT_FALSE(line.drawn());
  const std::string all = Contents(f);
  EXPECT_EQ(all.substr(all.size() - 4), "\r\033[K");
  line.End();  // once only
  EXPECT_EQ(Contents(f), all);
  std::fclose(f);
}

TEST(ProgressLine, AStreamThatFailsEndsTheLineWithoutFailingTheWork) {
  std::FILE* f = std::fopen("/dev/full", "w");  // every write fails (ENOSPC)
  if (f == nullptr) GTEST_SKIP() << "no /dev/full";
  ProgressLine line("pipette simulate", f, true, 0.0);
  line.Update(1, 2, "1 of 2", ProgressLine::Clock::now() + milliseconds(10));
  line.Update(2, 2, "2 of 2", ProgressLine::Clock::now() + milliseconds(1000));
  line.End();
  EXPECT_FALSE(line.drawn());
  std::fclose(f);
}

TEST(ProgressLine, DisabledDrawsNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line("pipette simulate", f, /*enabled=*/false, 0.0);
    line.Update(1, 2, "x", ProgressLine::Clock::now() + milliseconds(5000));
    EXPECT_FALSE(line.drawn());
  }
  EXPECT_EQ(Contents(f), "");
  std::fclose(f);
}

TEST(ProgressLine, TextWithoutATotalAndCutToTheWidth) {
  const ProgressLine line("pipette db merge", stderr, false);
  EXPECT_EQ(line.Text(3, 0, "3 runs", 75, 0), "pipette db merge: (3 runs), 1 min 15 s");
  EXPECT_EQ(line.Text(1, 3, "1 of 3 runs", 10, 0),
            "pipette db merge: 33% (1 of 3 runs), 10 s, about 20 s left");
  EXPECT_EQ(line.Text(1, 3, "1 of 3 runs", 10, 21), "pipette db merge: 33");
  EXPECT_EQ(line.Text(3, 3, "3 of 3 runs", 10, 0), "pipette db merge: 100% (3 of 3 runs), 10 s");
}

TEST(ProgressLine, DurationsAndTimeLeft) {
  EXPECT_EQ(Duration(0.4), "0 s");
  EXPECT_EQ(Duration(59.4), "59 s");
  EXPECT_EQ(Duration(80), "1 min 20 s");
  EXPECT_EQ(Duration(7500), "2 h 05 min");
  EXPECT_EQ(TimeLeft(10, 0, 5), "");  // no rate yet
  EXPECT_EQ(TimeLeft(10, 5, 5), "");  // done
  EXPECT_EQ(TimeLeft(10, 1, 5), "about 40 s left");
  EXPECT_EQ(TimeLeft(0.1, 1, 2), "less than a second left");
}

TEST(ProgressLine, WantedUnlessQuietOrTurnedOff) {
  ::setenv("PIPETTE_PROGRESS", "1", 1);
  EXPECT_TRUE(ProgressWanted(false));
  EXPECT_FALSE(ProgressWanted(true));
  ::setenv("PIPETTE_PROGRESS", "0", 1);
  EXPECT_FALSE(ProgressWanted(false));
  ::unsetenv("PIPETTE_PROGRESS");
  // The test's standard error is not a terminal under ctest, and its parent is not mpirun.
  if (::isatty(2) == 0) {
    EXPECT_FALSE(ProgressWanted(false));
  }
  EXPECT_FALSE(LauncherOutputIsTerminal());
}

TEST(ProgressLine, TheEnvironmentSetsTheDelay) {
  ::setenv("PIPETTE_PROGRESS_AFTER", "0", 1);
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line("x", f, true, 60.0);
    line.Update(1, 2, "1 of 2");
    EXPECT_TRUE(line.drawn());
  }  // the destructor clears the line
  EXPECT_EQ(Contents(f).substr(Contents(f).size() - 4), "\r\033[K");
  ::unsetenv("PIPETTE_PROGRESS_AFTER");
  std::fclose(f);
}

}  // namespace
}  // namespace pipette
