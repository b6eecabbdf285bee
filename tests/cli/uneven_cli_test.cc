// Uneven work end to end: `pipette schedule` and `pipette simulate` with --rank-speed,
// --microbatch-seqlens and --link-slowdown, their closed forms, simulate = schedule on the ideal
// network, the model path's variable lengths, and every bad value refused naming its option.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pipette/store/experiment_db.h"
#include "pipette_runner.h"

namespace {

using pipette::testing::CommandResult;
using pipette::testing::Pipette;

nlohmann::json Json(const CommandResult& run) {
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return run.exit_code == 0 ? nlohmann::json::parse(run.out) : nlohmann::json();
}

TEST(UnevenCli, GPipeWithASlowLastRank) {
  // Both phases are flow shops whose bottleneck is the last stage (speed 0.5: F 2, B 4):
  // forwards end at 3 * 1 + 8 * 2 = 19, its 8 backwards at 19 + 32, and the last one crosses the
  // 3 other stages: 51 + 3 * 2 = 57.
  const auto json = Json(
      Pipette("schedule gpipe -p 4 -m 8 --times F=1,I=1,W=1 --rank-speed 3=0.5 --format json"));
  EXPECT_DOUBLE_EQ(json["makespan"].get<double>(), 57);
  EXPECT_DOUBLE_EQ(json["busy"][3].get<double>(), 8 * 6);
  EXPECT_EQ(json["uneven"]["rank_speed"], nlohmann::json({1, 1, 1, 0.5}));
}

// A cluster of mixed GPU types gives `schedule` and `schedule search` their rank speeds: ranks 2
// and 3 on the A100 nodes of tests/data/clusters/mixed.toml run at the A100's bf16 peak over the
// H100's, exactly as the same --rank-speed does; --rank-speed multiplies on top.
TEST(UnevenCli, AMixedGpuClusterSetsTheRankSpeedsOfScheduleAndSearch) {
  const std::string cluster = " --cluster " PIPETTE_TEST_DATA_DIR "/clusters/mixed.toml";
  const std::string gpipe = "schedule gpipe -p 4 -m 8 --times F=1,I=1,W=1 --format json";
  const auto mixed = Json(Pipette(gpipe + cluster));
  const double a100 = mixed["uneven"]["rank_speed"][2].get<double>();
  EXPECT_NEAR(a100, 312e12 / 989.4e12, 1e-3);  // datasheet dense bf16 peaks
  EXPECT_EQ(mixed["uneven"]["rank_speed"][0], 1);
  EXPECT_EQ(mixed["uneven"]["rank_speed"][3], a100);
  const auto same =
      Json(Pipette(gpipe + fmt::format(" --rank-speed 2={:.17g},3={:.17g}", a100, a100)));
  EXPECT_DOUBLE_EQ(mixed["makespan"].get<double>(), same["makespan"].get<double>());
  const auto both = Json(Pipette(gpipe + cluster + " --rank-speed 0=0.5"));
  EXPECT_EQ(both["uneven"]["rank_speed"][0], 0.5);
  EXPECT_EQ(both["uneven"]["rank_speed"][2], a100);
  const auto search =
      Json(Pipette("schedule search -p 4 -m 8 --times F=1,I=1,W=1 --iterations 50 "
                   "--format json" +
                   cluster));
  EXPECT_LE(search["makespan"].get<double>(), mixed["makespan"].get<double>());
  EXPECT_GE(search["makespan"].get<double>(), 8 * 3 / a100);  // the slow ranks' busy time
  const auto bad = Pipette(gpipe + " --cluster no-such-cluster");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no-such-cluster"), std::string::npos) << bad.err;
}

TEST(UnevenCli, GPipeWithOneLongMicrobatchAndTheTextReportNamesIt) {
  // (f + b) (m - 1 + p K), K = 0.5 * 2 + 0.5 * 4 = 3 for twice the reference length.
  const std::string args =
      "schedule gpipe -p 4 -m 4 --times F=1,I=1,W=1 --microbatch-seqlens 1024,2048,1024,1024 "
      "--seq-len 1024 --attention-share 0.5";
  const auto json = Json(Pipette(args + " --format json"));
  EXPECT_DOUBLE_EQ(json["makespan"].get<double>(), 3 * (3 + 4 * 3));
  EXPECT_EQ(json["uneven"]["seq_len"], 1024);
  CommandResult text = Pipette(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("# uneven work: --microbatch-seqlens 1024,2048,1024,1024 --seq-len 1024 "
                          "--attention-share 0.5\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("makespan      45\n"), std::string::npos);
}

TEST(UnevenCli, SlowLinkMultipliesTheLatencyAndSeqlensComeFromAFile) {
  // 1F1B, m = 1, p = 3: 3 (f + b) + 2 (c + 3c) with link 1-2 three times slower.
  auto json = Json(
      Pipette("schedule 1f1b -p 3 -m 1 --times F=1,I=1,W=1 --latency 0.25 --link-slowdown 2-1=3 "
              "--format json"));
  EXPECT_DOUBLE_EQ(json["makespan"].get<double>(), 9 + 2 * (0.25 + 0.75));
  EXPECT_EQ(json["uneven"]["link_slowdown"], "2-1=3");
  CommandResult write =
      pipette::testing::Shell("printf '# lengths\\n100 200\\n300\\n' > seqlens.txt");
  ASSERT_EQ(write.exit_code, 0);
  // GPipe p = 2 with linear scaling: sum t_j + (p - 1) max t_j per phase, t_j = 3 s_j / 100.
  json =
      Json(Pipette("schedule gpipe -p 2 -m 3 --times F=1,I=1,W=1 --microbatch-seqlens seqlens.txt "
                   "--seq-len 100 --format json"));
  EXPECT_DOUBLE_EQ(json["makespan"].get<double>(), 3 * (6 + 3));
}

TEST(UnevenCli, SimulateOnTheIdealNetworkEqualsScheduleWithUnevenWork) {
  const std::string uneven =
      " --rank-speed 1=0.5,2=0.8 --microbatch-seqlens 512,1024,2048,1024,768,1024,4096,256 "
      "--seq-len 1024 --attention-share 0.25 --link-slowdown 0-1=2,2-3=4";
  for (const char* spec : {"1f1b -p 4 -m 8", "zb-h1 -p 4 -m 8", "interleaved-1f1b -p 4 -m 8 -v 2",
                           "zbv -p 4 -m 8", "dualpipe-v -p 4 -m 8"}) {
    const std::string s = spec;
    const std::string name = s.substr(0, s.find(' ')), shape = s.substr(s.find(' '));
    const auto schedule = Json(Pipette("schedule " + s + " --times F=1,I=2,W=1 --latency 0.25" +
                                       uneven + " --format json"));
    const auto sim = Json(Pipette("simulate --schedule " + name + shape +
                                  " --times F=1,I=2,W=1 --ideal-network --latency-us 250" + uneven +
                                  " --format json --no-db"));
    const double makespan = schedule["makespan"].get<double>();
    EXPECT_NEAR(sim["step_time_s"].get<double>() * 1e3, makespan, 1e-9 * makespan) << spec;
    EXPECT_NEAR(sim["bubble_ratio"].get<double>(), schedule["bubble_ratio"].get<double>(), 1e-12)
        << spec;
    // Against the even run: the straggler and the long microbatch cost time.
    const auto even = Json(Pipette("schedule " + s +
                                   " --times F=1,I=2,W=1 --latency 0.25 "
                                   "--format json"));
    EXPECT_GT(makespan, even["makespan"].get<double>() * 1.5) << spec;
  }
}

TEST(UnevenCli, SimulateTheModelWithVariableLengthsAndAStraggler) {
  const std::string base =
      "simulate --model gpt3-1.3b --cluster dgx-h100 --nodes 1 --pp 4 -m 4 --seq-len 2048 "
      "--format json --no-db";
  const auto even = Json(Pipette(base));
  // Every microbatch at the reference length and every rank at speed 1: the same run.
  const auto same =
      Json(Pipette(base + " --microbatch-seqlens 2048,2048,2048,2048 --rank-speed 0=1"));
  EXPECT_EQ(same["step_time_s"], even["step_time_s"]);
  // Half the microbatches twice as long: more tokens, more time, at least linear in them for
  // the longer ones (attention grows faster).
  const auto longer = Json(Pipette(base + " --microbatch-seqlens 2048,4096,2048,4096"));
  const double t0 = even["step_time_s"].get<double>(), t1 = longer["step_time_s"].get<double>();
  EXPECT_GT(t1, 1.4 * t0);
  EXPECT_NEAR(longer["tokens_per_s"].get<double>() * t1,
              1.5 * even["tokens_per_s"].get<double>() * t0,
              1e-6 * even["tokens_per_s"].get<double>() * t0);
  // A straggler at half speed: its stage becomes 1F1B's bottleneck, (m - 1) of its F + B and its
  // own once more are twice as long (sim tests check the model path against evaluate exactly).
  const auto slow = Json(Pipette(base + " --rank-speed 2=0.5"));
  EXPECT_GT(slow["step_time_s"].get<double>(), 1.4 * t0);
  EXPECT_LT(slow["step_time_s"].get<double>(), 2.0 * t0);
}

TEST(UnevenCli, BadUnevenInputExitsTwoNamingTheOption) {
  const std::pair<const char*, const char*> cases[] = {
      {"schedule 1f1b -p 4 -m 8 --rank-speed 4=0.5", "--rank-speed '4=0.5': rank '4' must be"},
      {"schedule 1f1b -p 4 -m 8 --rank-speed 1=0", "speed '0' must be a number in (0, 100]"},
      {"schedule 1f1b -p 4 -m 8 --rank-speed 1=0.5,1=0.7", "rank 1 is given twice"},
      {"schedule 1f1b -p 4 -m 8 --link-slowdown 1-1=2", "two different ranks"},
      {"schedule 1f1b -p 4 -m 8 --link-slowdown 0-1=0.5", "factor '0.5' must be a number in [1"},
      {"schedule 1f1b -p 4 -m 2 --microbatch-seqlens 1,2 ", "--microbatch-seqlens needs --seq-len"},
      {"schedule 1f1b -p 4 -m 2 --microbatch-seqlens 1,2,3 --seq-len 2",
       "3 sequence lengths for 2 microbatches"},
      {"schedule 1f1b -p 4 -m 2 --microbatch-seqlens 1,0 --seq-len 2", "item 1 '0'"},
      {"schedule 1f1b -p 4 -m 2 --microbatch-seqlens nofile.txt --seq-len 2",
       "--microbatch-seqlens file 'nofile.txt'"},
      {"schedule 1f1b -p 4 -m 2 --microbatch-seqlens 1,2 --seq-len 2 --attention-share 1.5",
       "--attention-share 1.5: must be a number in [0, 1]"},
      {"schedule 1f1b -p 4 -m 2 --seq-len 2", "--seq-len = 2: applies only with"},
      {"schedule 1f1b -p 4 -m 2 --attention-share 0.5", "applies only with --microbatch-seqlens"},
      {"simulate --times F=1 --ideal-network -p 4 -m 2 --microbatch-seqlens 1,2",
       "--microbatch-seqlens needs --seq-len"},
      {"simulate --pp 4 -m 4 --attention-share 0.5 --no-db",
       "--attention-share = 0.5: applies only with --times or --costs-from"},
      {"simulate --pp 4 -m 4 --rank-speed 9=1 --no-db", "rank '9' must be an integer in [0, 4)"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_NE(run.err.find(message), std::string::npos) << args << " -> " << run.err;
    EXPECT_EQ(run.out, "") << args;
  }
}

TEST(UnevenCli, ASweepVariesTheUnevenWorkAndEachRunRecordsIt) {
  // GPipe p = 4, m = 8, F = I = W = 1 ms: even 33 ms; rank 3 at 0.5: 57 ms
  // (GPipeWithASlowLastRank).
  const std::string spec = R"(name = "straggler"
[fixed]
schedule = "gpipe"
times = "F=1,I=1,W=1"
ideal-network = true
pp = 4
m = 8
[axes]
rank-speed = ["", "3=0.5"]
)";
  ASSERT_EQ(pipette::testing::Shell("cat > straggler.toml <<'END'\n" + spec + "END\n").exit_code,
            0);
  CommandResult sweep = Pipette("sweep straggler.toml --db straggler.db");
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  CommandResult runs = Pipette("runs --db straggler.db --experiment straggler --format json");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const auto json = nlohmann::json::parse(runs.out);
  ASSERT_EQ(json.size(), 2u) << runs.out;
  int slowed = 0;
  for (const auto& run : json) {
    EXPECT_EQ(run["status"], "ok");
    const bool uneven = run["config"].contains("uneven");
    slowed += uneven;
    if (uneven) {
      EXPECT_EQ(run["config"]["uneven"]["rank_speed"], nlohmann::json({1, 1, 1, 0.5}));
    }
    pipette::Result<pipette::ExperimentDb> db =
        pipette::ExperimentDb::OpenReadOnly(pipette::testing::ScratchDir() + "/straggler.db");
    ASSERT_TRUE(db.ok()) << db.status().message();
    pipette::Result<pipette::RunData> data = db->LoadRun(run["id"].get<std::int64_t>(), false);
    ASSERT_TRUE(data.ok()) << data.status().message();
    EXPECT_NEAR(data->Metric("step_time_s", -1), uneven ? 0.057 : 0.033, 1e-12);
  }
  EXPECT_EQ(slowed, 1);
}

}  // namespace
