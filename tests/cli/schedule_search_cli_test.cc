// End-to-end tests of `pipette schedule search`: its CSV loads as csv: and simulates to the
// searched makespan, the JSON and text reports, heterogeneous and uneven costs, and bad input
// (exit 2, the option named).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "pipette_runner.h"

namespace {

using pipette::testing::CommandResult;
using pipette::testing::Pipette;
using pipette::testing::ScratchDir;

// V placement, F=2, I=1, W=1, ZB-V's memory: zbv takes 72, the optimum (the bound) is 70.
const std::string kForwardHeavy =
    "schedule search -p 4 -m 8 --placement v --times F=2,I=1,W=1 --memory-limit 8 "
    "--iterations 200 --time-limit 0";

TEST(ScheduleSearchCli, CsvLoadsBackAndSimulatesToTheSearchedMakespan) {
  CommandResult csv = Pipette(kForwardHeavy + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const std::string path = ScratchDir() + "/searched.csv";
  std::ofstream(path) << csv.out;

  CommandResult evaluated = Pipette("schedule csv:" + path + " --times F=2,I=1,W=1 --format json");
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.err;
  const auto e = nlohmann::json::parse(evaluated.out);
  EXPECT_EQ(e["p"], 4);
  EXPECT_EQ(e["v"], 2);
  EXPECT_EQ(e["m"], 8);
  EXPECT_DOUBLE_EQ(e["makespan"].get<double>(), 70.0);
  for (const auto& peak : e["peak_activations"]) EXPECT_LE(peak.get<int>(), 8);

  CommandResult simulated = Pipette("simulate --schedule csv:" + path +
                                    " --times F=2,I=1,W=1 --ideal-network --no-db --format json");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  EXPECT_NEAR(nlohmann::json::parse(simulated.out)["step_time_s"].get<double>(), 0.070, 1e-12);
}

TEST(ScheduleSearchCli, JsonAndTextReportTheSearch) {
  CommandResult json = Pipette(kForwardHeavy + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["schedule"], "search");
  EXPECT_DOUBLE_EQ(j["makespan"].get<double>(), 70.0);
  const auto& s = j["search"];
  EXPECT_EQ(s["placement"], "v");
  EXPECT_EQ(s["memory_limit"], 8);
  EXPECT_DOUBLE_EQ(s["makespan"].get<double>(), 70.0);
  EXPECT_DOUBLE_EQ(s["lower_bound"].get<double>(), 70.0);
  EXPECT_EQ(s["best_builtin"], "zbv");
  EXPECT_DOUBLE_EQ(s["best_builtin_makespan"].get<double>(), 72.0);
  EXPECT_EQ(s["iterations"], 200);
  EXPECT_EQ(s["stage_costs"].size(), 8u);

  CommandResult text = Pipette(kForwardHeavy);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(
      text.out.find("# makespan 70   lower bound 70   best built-in within the limit: zbv 72"),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("rank   3 |"), std::string::npos);
}

TEST(ScheduleSearchCli, HeterogeneousAndUnevenCosts) {
  CommandResult stages = Pipette(
      "schedule search -p 2 -m 4 --stage-times 'F=1;F=1;F=1;F=2,I=2,W=2' -v 2 --iterations 50 "
      "--format json");
  ASSERT_EQ(stages.exit_code, 0) << stages.err;
  const auto stages_json = nlohmann::json::parse(stages.out);
  const auto& costs = stages_json["search"]["stage_costs"];
  ASSERT_EQ(costs.size(), 4u);
  EXPECT_DOUBLE_EQ(costs[0]["f"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(costs[0]["i"].get<double>(), 1.0);  // from --times
  EXPECT_DOUBLE_EQ(costs[3]["w"].get<double>(), 2.0);

  // A slow link between ranks 1 and 2: zb-h1 waits on it (42.5); the search does not as much.
  CommandResult link = Pipette(
      "schedule search -p 4 -m 8 --latency 0.25 --link-slowdown 1-2=8 --memory-limit 4 "
      "--iterations 200 --time-limit 0 --format json");
  ASSERT_EQ(link.exit_code, 0) << link.err;
  const auto link_json = nlohmann::json::parse(link.out);
  const auto& l = link_json["search"];
  EXPECT_DOUBLE_EQ(l["best_builtin_makespan"].get<double>(), 42.5);
  EXPECT_LT(l["makespan"].get<double>(), 42.5);
  EXPECT_DOUBLE_EQ(l["lower_bound"].get<double>(), 29.5);

  // Half-speed rank 2 is the bottleneck: 2 forwards to reach it, then 8 * 6 of its work.
  CommandResult straggler = Pipette(
      "schedule search -p 4 -m 8 --rank-speed 2=0.5 --iterations 50 --time-limit 0 --format json");
  ASSERT_EQ(straggler.exit_code, 0) << straggler.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(straggler.out)["search"]["makespan"].get<double>(), 50.0);
}

TEST(ScheduleSearchCli, BadInputExitsTwoNamingTheOption) {
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"-p 4", "missing -m"},
      {"-m 8", "missing -p"},
      {"-p 4 -m 8 --placement zigzag", "--placement"},
      {"-p 4 -m 8 -v 2 --memory-limit 1", "--memory-limit = 1"},
      {"-p 4 -m 8 --memory-limit -3", "--memory-limit = -3: must be at least 0"},
      {"-p 4 -m 8 --placement v -v 3", "-v = 3: the V placement holds exactly 2"},
      {"-p 4 -m 8 --stage-times 'F=2;F=3'", "--stage-times = 'F=2;F=3': has 2 entries"},
      {"-p 4 -m 8 --stage-times 'F=1;F=1;F=x;F=1'", "--stage-times (stage 2)"},
      {"-p 4 -m 8 --rank-speed 9=0.5", "--rank-speed"},
      {"-p 4 -m 2 --microbatch-seqlens 512,1024", "--seq-len"},
      {"-p 4 -m 8 --link-slowdown 1-1=2", "--link-slowdown"},
      {"-p 4 -m 8 --time-limit -1", "--time-limit = -1"},
      {"-p 4 -m 8 --iterations -5", "--iterations = -5"},
      {"-p 64 -m 2048", "p*v*m = 131072"},
  };
  for (const Case& c : cases) {
    CommandResult run = Pipette("schedule search " + c.args);
    EXPECT_EQ(run.exit_code, 2) << c.args << ": " << run.err;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
}

TEST(ScheduleSearchCli, TheScheduleCommandStillTakesANamedSchedule) {
  CommandResult run = Pipette("schedule zb-h1 -p 4 -m 8 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(run.out)["makespan"].get<double>(), 27.0);
}

// `schedule search -p 64 -m 1024 --time-limit 0` ran 297 s: without a time limit only the
// iterations bound the search, and a budget whose estimate passes 600 s is refused up front.
TEST(ScheduleSearchCli, AnUnboundedSearchBeyondTheEstimateLimitIsRefused) {
  CommandResult run = Pipette("schedule search -p 64 -m 1024 --time-limit 0");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--time-limit 0 --iterations 2000: the search of 65536 chunks could take "
                         "up to about 1049 s"),
            std::string::npos)
      << run.err;
}

}  // namespace
