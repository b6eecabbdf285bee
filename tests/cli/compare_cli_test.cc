// `pipette compare` end to end: a recorded simulate run compared with itself joins every event
// with no error at all, in text and JSON; runs of different programs, bad run ids, missing runs
// and a negative --worst are refused with exit 2 and nothing printed on standard output; plot
// --step is refused outside timelines and for a step the runs did not trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pipette_runner.h"

namespace pipette {
namespace {

using pipette::testing::Contains;
using testing::CommandResult;
using testing::Pipette;

// Records two model runs in `db`: run 1 with m = 4 and run 2 with m = 8, two steps each.
void RecordTwoRuns(const std::string& db) {
  std::filesystem::remove(testing::ScratchDir() + "/" + db);
  for (const char* m : {"4", "8"}) {
    const CommandResult run =
        Pipette("simulate --db " + db + " --pp 2 -m " + std::string(m) + " --steps 2");
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
}

TEST(CompareCli, ARunAgainstItselfHasNoErrorAnywhere) {
  RecordTwoRuns("self.db");
  const CommandResult json = Pipette("compare 1 1 --db self.db --format json --worst 3");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json c = nlohmann::json::parse(json.out);
  EXPECT_EQ(c["predicted"]["run"], 1);
  EXPECT_EQ(c["measured"]["engine"], "sim");
  // 2 ranks, 4 microbatches, F and B each plus a send and a receive per boundary crossing.
  EXPECT_GT(c["pairs"].get<int>(), 2 * 2 * 4);
  EXPECT_EQ(c["all"]["count"], c["pairs"]);
  EXPECT_EQ(c["all"]["start_abs_s"]["p90"], 0.0);
  EXPECT_EQ(c["all"]["duration_abs_rel"]["p90"], 0.0);
  EXPECT_EQ(c["all"]["duration_abs_s"]["p90"], 0.0);
  EXPECT_EQ(c["step_time"]["error_rel"], 0.0);
  ASSERT_EQ(c["steps"].size(), 2u);  // both steps traced
  for (const auto& step : c["steps"]) EXPECT_EQ(step["error_rel"], 0.0);
  ASSERT_EQ(c["peak_memory"].size(), 2u);
  for (const auto& rank : c["peak_memory"]) {
    EXPECT_GT(rank["measured_bytes"].get<double>(), 0);
    EXPECT_EQ(rank["error_rel"], 0.0);
  }
  EXPECT_EQ(c["worst"].size(), 3u);
  for (const char* kind : {"F", "B", "SEND_F", "RECV_F", "SEND_B", "RECV_B"}) {
    ASSERT_TRUE(c["kinds"].contains(kind)) << kind;
    EXPECT_EQ(c["kinds"][kind]["start_abs_s"]["median"], 0.0) << kind;
  }

  const CommandResult text = Pipette("compare 1 1 --db self.db");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Contains(text.out,
                       "# pipette compare: run 1 (sim, predicted) against run 1 (sim, "
                       "measured)"))
      << text.out;
  EXPECT_TRUE(Contains(text.out, "error +0.00%")) << text.out;
  EXPECT_TRUE(Contains(text.out, "# the 10 worst events")) << text.out;
  EXPECT_TRUE(Contains(text.out, "# peak memory per rank")) << text.out;
}

TEST(CompareCli, RefusesRunsOfDifferentPrograms) {
  RecordTwoRuns("two.db");
  for (const std::string order : {"1 2", "2 1"}) {
    const CommandResult run = Pipette("compare " + order + " --db two.db");
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_EQ(run.out, "");
    const std::string first = order == "1 2" ? "4 in run 1" : "8 in run 2";
    EXPECT_TRUE(Contains(run.err, "are not the same program: configuration key 'm' is " + first))
        << run.err;
  }
}

TEST(CompareCli, RefusesBadRunsAndOptions) {
  RecordTwoRuns("bad.db");
  for (const std::string args : {"1 x", "0 1", "1 2 --worst -1"}) {
    const CommandResult run = Pipette("compare " + args + " --db bad.db");
    EXPECT_EQ(run.exit_code, 2) << args << ": " << run.err;
    EXPECT_EQ(run.out, "") << args;
  }
  EXPECT_TRUE(Contains(Pipette("compare 1 x --db bad.db").err, "run B = 'x': must be a run id"));
  const CommandResult missing = Pipette("compare 1 9 --db bad.db");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_TRUE(Contains(missing.err, "run B = 9: no such run in 'bad.db'")) << missing.err;
  const CommandResult no_db = Pipette("compare 1 2 --db absent.db");
  EXPECT_EQ(no_db.exit_code, 2) << no_db.err;
}

// `plot --step` belongs to timelines and must name a traced step; both refusals exit 2 before
// gnuplot runs.
TEST(PlotCli, StepIsATracedStepOfATimeline) {
  RecordTwoRuns("step.db");
  const CommandResult memory = Pipette("plot memory --db step.db --run 1,2 --step 1 --out m.png");
  EXPECT_EQ(memory.exit_code, 2) << memory.err;
  EXPECT_TRUE(Contains(memory.err, "--step = 1: a timeline's step, >= 0 (timeline only)"))
      << memory.err;
  const CommandResult missing =
      Pipette("plot timeline --db step.db --run 2,1 --step 2 --out t.png");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_TRUE(Contains(missing.err,
                       "--step = 2: run 2 has no events of that step (its last traced step is 1)"))
      << missing.err;
  EXPECT_FALSE(std::filesystem::exists(testing::ScratchDir() + "/t.png"));
}

}  // namespace
}  // namespace pipette
