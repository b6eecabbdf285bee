// Progress lines of long work (issue 33) on a real terminal: each command runs under script(1),
// which gives it a pseudo-terminal, with PIPETTE_PROGRESS_AFTER=0 so that a short run shows its
// line. simulate reports instructions and simulated time, train steps, db merge runs; every line is
// cleared before the command's output; --quiet and output that is not a terminal show none.
#include <gtest/gtest.h>

#include <string>

#include "pipette_runner.h"

namespace pipette::testing {
namespace {

constexpr char kLineStart[] = "\r\033[K";

// `pipette <args>` on a pseudo-terminal (standard output and error both), its screen output.
CommandResult OnTerminal(const std::string& args) {
  return Shell("PIPETTE_PROGRESS_AFTER=0 script -qefc '" + std::string(PIPETTE_BINARY) + " " +
               args + "' /dev/null < /dev/null");
}

const std::string kSimulate = "simulate --times F=1,I=1,W=1 --ideal-network --pp 32 -m 256 --no-db";

TEST(ProgressCli, SimulateShowsInstructionsAndSimulatedTimeThenClearsTheLine) {
  const CommandResult r = OnTerminal(kSimulate);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // 32 ranks x (256 F + 256 B + their sends and receives): 48.1 k instructions, one report per
  // 16,384 of them.
  EXPECT_TRUE(Contains(r.out, std::string(kLineStart) + "pipette simulate: 34% (16.4 k of 48.1 k "
                                                        "instructions, "))
      << r.out;
  // The last line is cleared before the report begins.
  EXPECT_TRUE(Contains(r.out, std::string(kLineStart) + "# pipette ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "step_time     861 ms"));
}

TEST(ProgressCli, QuietOrNoTerminalShowsNone) {
  const CommandResult quiet = OnTerminal(kSimulate + " --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_FALSE(Contains(quiet.out, "pipette simulate:")) << quiet.out;
  EXPECT_TRUE(Contains(quiet.out, "step_time     861 ms"));
  const CommandResult piped =
      Shell("PIPETTE_PROGRESS_AFTER=0 " + std::string(PIPETTE_BINARY) + " " + kSimulate);
  ASSERT_EQ(piped.exit_code, 0);
  EXPECT_FALSE(Contains(piped.err, "pipette simulate:")) << piped.err;
  EXPECT_FALSE(Contains(piped.out, "\033[K"));
  // PIPETTE_PROGRESS=0 turns it off on a terminal too.
  const CommandResult off =
      Shell("PIPETTE_PROGRESS=0 PIPETTE_PROGRESS_AFTER=0 script -qefc '" +
            std::string(PIPETTE_BINARY) + " " + kSimulate + "' /dev/null < /dev/null");
  EXPECT_FALSE(Contains(off.out, "pipette simulate:")) << off.out;
}

TEST(ProgressCli, TrainShowsStepsBetweenItsStepLines) {
  // p = dp = 1 runs without mpirun.
  const CommandResult r = OnTerminal("train -p 1 -m 2 --steps 3 --no-db");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(
      Contains(r.out, std::string(kLineStart) + "pipette train: 33% (1 of 3 steps, the last "))
      << r.out;
  EXPECT_TRUE(Contains(r.out, std::string(kLineStart) + "pipette train: 66% (2 of 3 steps"));
  // Cleared before the next step line is printed.
  EXPECT_TRUE(Contains(r.out, std::string(kLineStart) + "      3 ")) << r.out;
  EXPECT_FALSE(
      Contains(OnTerminal("train -p 1 -m 2 --steps 3 --no-db --quiet").out, "pipette train:"));
}

TEST(ProgressCli, DbMergeShowsRunsOfAllInputs) {
  for (const char* db : {"progress-a.db", "progress-b.db"}) {
    for (int m : {4, 8}) {
      ASSERT_EQ(Pipette(std::string("simulate --times F=1,I=1,W=1 --ideal-network --pp 2 -m ") +
                        std::to_string(m) + " --db " + db)
                    .exit_code,
                0);
    }
  }
  const CommandResult r = OnTerminal("db merge progress-out.db progress-a.db progress-b.db");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The first run drawn at once (no delay); the next within the redraw interval are not.
  EXPECT_TRUE(Contains(r.out, std::string(kLineStart) + "pipette db merge: 25% (1 of 4 runs)"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, std::string(kLineStart) + "# pipette db merge: 2 inputs")) << r.out;
}

}  // namespace
}  // namespace pipette::testing
