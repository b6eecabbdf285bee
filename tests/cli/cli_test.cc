// End-to-end tests of the pipette binary: exit codes, stdout/stderr, JSON shape, golden text.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/store/experiment_db.h"
#include "pipette_runner.h"

namespace {

using pipette::testing::CommandResult;
using pipette::testing::Pipette;
using pipette::testing::ReadFile;
using pipette::testing::ScratchDir;

// Drops the first line (it carries the version).
std::string WithoutFirstLine(const std::string& text) {
  const auto newline = text.find('\n');
  return newline == std::string::npos ? "" : text.substr(newline + 1);
}

TEST(Cli, VersionNamesTheLibraries) {
  CommandResult run = Pipette("--version");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out.rfind("pipette 0.", 0), 0u) << run.out;
  for (const char* library : {"compiler", "fmt", "CLI11", "nlohmann-json"}) {
    EXPECT_NE(run.out.find(library), std::string::npos) << library;
  }
}

TEST(Cli, ListShowsEverySchedule) {
  CommandResult run = Pipette("schedule --list");
  EXPECT_EQ(run.exit_code, 0);
  for (const pipette::ScheduleGenerator* g : pipette::AllScheduleGenerators()) {
    EXPECT_NE(run.out.find("  " + std::string(g->name()) + " "), std::string::npos) << g->name();
  }
}

TEST(Cli, JsonHasExactlyTheDocumentedKeysInOrder) {
  CommandResult run = Pipette("schedule zbv -p 2 -m 4 --times F=1,I=2,W=1 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::ordered_json::parse(run.out);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"schedule", "p", "v", "m", "placement", "ranks", "makespan",
                                      "bubble_ratio", "busy", "peak_activations"}));
  EXPECT_EQ(json["schedule"], "zbv");
  EXPECT_EQ(json["p"], 2);
  EXPECT_EQ(json["v"], 2);
  EXPECT_EQ(json["m"], 4);
  EXPECT_EQ(json["placement"], nlohmann::json::parse("[0,1,1,0]"));
  EXPECT_EQ(json["ranks"][0][0], "0F0");
  EXPECT_EQ(json["ranks"].size(), 2u);
  EXPECT_DOUBLE_EQ(json["makespan"].template get<double>(), 2 * 4 * 4 + 1 * (1 + 2 - 1));
  EXPECT_EQ(json["busy"], nlohmann::json::parse("[32.0,32.0]"));
  EXPECT_EQ(json["peak_activations"].size(), 2u);
}

TEST(Cli, CsvOutputIsPyTorchComputeOnlyCsvAndLoadsBack) {
  CommandResult run = Pipette("schedule dualpipe-v -p 4 -m 10 --format csv");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, ReadFile(std::string(PIPETTE_TEST_DATA_DIR) +
                              "/reference/dualpipe-v_p4_v2_m10_pytorch-artifact.csv"));
  const std::string path =
      ::testing::TempDir() + std::to_string(getpid()) + "_pipette_cli_roundtrip.csv";
  std::ofstream(path) << run.out;
  CommandResult back = Pipette("schedule csv:" + path + " --format csv");
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out, run.out);
  CommandResult json = Pipette("schedule csv:" + path + " -p 4 --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["schedule"], "csv:" + path);
}

TEST(Cli, TextReportMatchesGoldenFiles) {
  for (const auto& [args, golden] : std::vector<std::pair<std::string, std::string>>{
           {"schedule 1f1b -p 4 -m 8", "schedule_1f1b_p4_m8.txt"},
           {"schedule dualpipe-v -p 2 -m 4 --times F=1,I=2,W=1 --latency 0.5",
            "schedule_dualpipe-v_p2_m4.txt"},
           {"schedule interleaved-1f1b -p 4 -m 8 -v 2",
            "schedule_interleaved-1f1b_p4_v2_m8.txt"}}) {
    CommandResult run = Pipette(args);
    ASSERT_EQ(run.exit_code, 0) << args << ": " << run.err;
    const std::string expected = ReadFile(std::string(PIPETTE_TEST_DATA_DIR) + "/golden/" + golden);
    EXPECT_FALSE(expected.empty()) << golden;
    EXPECT_EQ(WithoutFirstLine(run.out), WithoutFirstLine(expected)) << args;
  }
}

TEST(Cli, BadInputExitsTwoWithAMessageOnStderr) {
  const std::pair<const char*, const char*> cases[] = {
      {"schedule 2f2b -p 4 -m 8", "unknown schedule '2f2b'"},
      {"schedule 1f1b -p 4 -m 0", "-m = 0: must be at least 1"},
      {"schedule 1f1b -m 8", "missing -p"},
      {"schedule 1f1b -p 4", "missing -m"},
      {"schedule", "missing schedule NAME"},
      {"schedule zbv -p 4 -m 8 -v 3", "v = 3: this schedule has exactly 2"},
      {"schedule dualpipe -p 3 -m 8", "p = 3: DualPipe needs an even number of ranks"},
      {"schedule 1f1b -p 4 -m 8 --times F=1,X=2", "unknown key 'X'"},
      {"schedule 1f1b -p 4 -m 8 --times F=-1", "F='-1': must be a number in [0, 1e+12]"},
      {"schedule 1f1b -p 4 -m 8 --latency -1", "--latency = -1: must be a number in [0, 1e+12]"},
      {"schedule 1f1b -p 4 -m 8 --times F=1e308", "must be a number in [0, 1e+12]"},
      {"schedule 1f1b -p 4 -m 8 --times F=nan", "must be a number in [0, 1e+12]"},
      {"schedule 1f1b -p 4 -m 8 --latency 1e300", "--latency = 1e+300"},
      {"schedule interleaved-1f1b -p 4 -m 8 -v 1 --group-size 4", "chunk groups exist only"},
      {"schedule csv:/tmp", "not a regular file"},
      {"schedule 1f1b -p 4 -m 8 --format xml", "--format"},
      {"schedule 1f1b -p four -m 8", "-p"},
      {"schedule csv:/nonexistent.csv", "not a regular file (or it does not exist)"},
      {"schedule 1f1b -p 10000 -m 100000", "more than the limit of 16000000 chunks"},
      {"schedule 1f1b -p 16385 -m 1", "-p = 16385: more than the limit of 16384"},
      {"schedule interleaved-gpipe -p 16000 -v 2097152 -m 4194304", "more than the limit"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_NE(run.err.find(message), std::string::npos) << args << " -> " << run.err;
    EXPECT_EQ(run.out, "") << args;
  }
}

TEST(Cli, InvalidCustomScheduleExitsTwoNamingRankAndAction) {
  const std::string path =
      ::testing::TempDir() + std::to_string(getpid()) + "_pipette_cli_deadlock.csv";
  std::ofstream(path) << "0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n";
  CommandResult run = Pipette("schedule csv:" + path);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("deadlock: rank 0 is stuck at action 1 (0B0)"), std::string::npos)
      << run.err;
  // Values given explicitly are checked even though the file supplies them.
  CommandResult zero = Pipette("schedule csv:" + path + " -m 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("-m = 0: must be at least 1"), std::string::npos) << zero.err;
}

TEST(Cli, PartitionJsonHasTheDocumentedKeys) {
  CommandResult run = Pipette("partition --model gpt2-124m --pp 4 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::ordered_json::parse(run.out);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  ASSERT_GE(keys.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + 4),
            (std::vector<std::string>{"model", "total_params", "stages", "balance"}));
  EXPECT_EQ(json["model"], "gpt2-124m");
  ASSERT_EQ(json["stages"].size(), 4u);
  std::vector<std::string> stage_keys;
  for (const auto& item : json["stages"][0].items()) stage_keys.push_back(item.key());
  EXPECT_EQ(stage_keys, (std::vector<std::string>{"index", "rank", "layers", "params", "fwd_flops",
                                                  "time_f_s", "time_i_s", "time_w_s",
                                                  "activation_bytes", "boundary_bytes"}));
  EXPECT_EQ(json["stages"][0]["layers"][0], "embedding");
  EXPECT_EQ(json["stages"][3]["layers"].back(), "loss");
  std::int64_t params = 0;
  for (const auto& stage : json["stages"]) params += stage["params"].get<std::int64_t>();
  EXPECT_EQ(params, json["total_params"].get<std::int64_t>());
}

TEST(Cli, BalancedPartitionOfLlama2At8StagesBeatsUniform) {
  auto balance = [](const std::string& strategy) {
    CommandResult run =
        Pipette("partition --model llama2-7b --pp 8 --format json --strategy " + strategy);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.exit_code == 0 ? nlohmann::json::parse(run.out)["balance"].get<double>() : 0.0;
  };
  const double balanced = balance("balanced");
  const double uniform = balance("uniform");
  EXPECT_LE(balanced, 1.10);
  EXPECT_GT(uniform, balanced + 0.03);
}

TEST(Cli, PartitionBadInputExitsTwoNamingTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {"partition --model nosuch --pp 4", "nosuch"},
      {"partition --model llama2-7b --pp 4 --strategy fastest", "--strategy = 'fastest'"},
      {"partition --model llama2-7b --pp 2 --tp 3", "--tp = 3"},
      {"partition --model gpt2-124m --pp 64 --nodes 8", "--pp"},
      {"partition --model llama2-7b --pp 16", "more than the 8 GPUs"},
      {"partition --model llama2-7b --pp 4 --dtype int4", "--dtype = 'int4'"},
      {"partition --model llama2-7b --pp 4 --cluster nosuch", "nosuch"},
      {"partition --model llama3-70b --pp 2 --strategy memory", "does not fit"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args << " -> " << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << args << " -> " << run.err;
  }
}

TEST(Cli, ModelsAndClustersListThePresets) {
  CommandResult models = Pipette("models");
  EXPECT_EQ(models.exit_code, 0);
  for (const char* name : {"gpt2-124m", "gpt2-1.5b", "gpt3-1.3b", "gpt3-175b", "llama2-7b",
                           "llama3-8b", "llama3-70b", "tiny-llama", "tiny-llama-tied"}) {
    EXPECT_NE(models.out.find(std::string("  ") + name + " "), std::string::npos) << name;
  }
  CommandResult clusters = Pipette("clusters");
  EXPECT_EQ(clusters.exit_code, 0);
  EXPECT_NE(clusters.out.find("dgx-h100"), std::string::npos);
  EXPECT_NE(clusters.out.find("dgx-a100"), std::string::npos);
}

TEST(Cli, SimulateOnAnIdealNetworkReproducesTheScheduleMakespan) {
  for (const char* args : {"1f1b -p 4 -m 8", "eager-1f1b -p 4 -m 8", "zb-h2 -p 4 -m 8",
                           "interleaved-1f1b -p 4 -m 8 -v 2", "kimi-k2 -p 4 -m 8", "zbv -p 4 -m 8",
                           "dualpipe -p 4 -m 8", "dualpipe-v -p 4 -m 10"}) {
    const std::string spec = args;
    const std::string name = spec.substr(0, spec.find(' '));
    const std::string shape = spec.substr(spec.find(' '));
    for (const char* latency : {"0", "0.25"}) {
      CommandResult schedule =
          Pipette("schedule " + spec + " --times F=1,I=2,W=1 --format json --latency " + latency);
      ASSERT_EQ(schedule.exit_code, 0) << schedule.err;
      // The same costs in milliseconds and the latency in microseconds.
      CommandResult simulate =
          Pipette("simulate --schedule " + name + shape + " --times F=1,I=2,W=1 --ideal-network " +
                  "--format json --latency-us " + std::to_string(std::stod(latency) * 1000));
      ASSERT_EQ(simulate.exit_code, 0) << simulate.err;
      const double makespan = nlohmann::json::parse(schedule.out)["makespan"].get<double>();
      const auto sim = nlohmann::json::parse(simulate.out);
      EXPECT_NEAR(sim["step_time_s"].get<double>() * 1e3, makespan, 1e-9 * makespan) << spec;
      EXPECT_NEAR(sim["bubble_ratio"].get<double>(),
                  nlohmann::json::parse(schedule.out)["bubble_ratio"].get<double>(), 1e-12)
          << spec;
      EXPECT_EQ(sim["status"], "ok");
    }
  }
}

TEST(Cli, SimulateBadInputExitsTwo) {
  const std::pair<const char*, const char*> cases[] = {
      {"simulate --times F=1 ", "--times needs --ideal-network"},
      {"simulate --times F=1 --ideal-network --latency-us -3", "--latency-us = -3"},
      {"simulate --times F=1 --ideal-network --schedule zbv -v 3", "v = 3"},
      {"simulate --times Q=1 --ideal-network", "unknown key 'Q'"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_NE(run.err.find(message), std::string::npos) << args << " -> " << run.err;
  }
}

TEST(Cli, SimulateWithoutArgumentsRunsTheDefaultModelOnTheDefaultCluster) {
  CommandResult run = Pipette("simulate --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["model"], "gpt3-1.3b");
  EXPECT_EQ(json["cluster"], "dgx-h100");
  EXPECT_EQ(json["status"], "ok");
  const double step = json["step_time_s"].get<double>();
  EXPECT_GT(step, 0);
  EXPECT_DOUBLE_EQ(step, json["pipeline_time_s"].get<double>());  // dp = 1: no all-reduce
  EXPECT_GT(json["mfu"].get<double>(), 0.05);
  EXPECT_LT(json["mfu"].get<double>(), 0.5);  // at most the roofline's efficiency
  // 1F1B at p = 4, m = 8: the bubble is near (p-1)/(m+p-1) = 3/11.
  EXPECT_NEAR(json["bubble_ratio"].get<double>(), 3.0 / 11, 0.03);
  EXPECT_NEAR(json["tokens_per_s"].get<double>(), 8 * 2048 / step, 1e-6 * 8 * 2048 / step);
  EXPECT_EQ(json["peak_memory_bytes"].size(), 4u);
}

TEST(Cli, SimulateAddsTheDataParallelAllReduce) {
  CommandResult run = Pipette("simulate --dp 2 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  for (const auto& seconds : json["allreduce_s"]) EXPECT_GT(seconds.get<double>(), 0);
  EXPECT_GT(json["step_time_s"].get<double>(), json["pipeline_time_s"].get<double>());
}

TEST(Cli, SimulateRunsStepsBackToBack) {
  CommandResult one = Pipette("simulate --dp 2 --format json");
  CommandResult three = Pipette("simulate --dp 2 --steps 3 --format json");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  const auto a = nlohmann::json::parse(one.out);
  const auto b = nlohmann::json::parse(three.out);
  ASSERT_EQ(b["step_times_s"].size(), 3u);
  EXPECT_EQ(b["steps"], 3);
  // The first step is the single-step run; later ones start as soon as each rank is free, so they
  // take no longer; the reported step time is the mean.
  EXPECT_DOUBLE_EQ(b["step_times_s"][0].get<double>(), a["step_time_s"].get<double>());
  double sum = 0;
  for (const auto& t : b["step_times_s"]) {
    EXPECT_LE(t.get<double>(), a["step_time_s"].get<double>() * (1 + 1e-12));
    sum += t.get<double>();
  }
  EXPECT_NEAR(b["step_time_s"].get<double>(), sum / 3, 1e-12);
  for (const char* bad : {"--steps 0", "--steps -2", "--steps 1001"}) {
    CommandResult run = Pipette(std::string("simulate ") + bad);
    EXPECT_EQ(run.exit_code, 2) << bad;
    EXPECT_NE(run.err.find("--steps"), std::string::npos) << run.err;
  }
}

TEST(Cli, SimulateReportsOomNamingTheRankAndTime) {
  // The weights alone do not fit: out of memory from the start.
  CommandResult run = Pipette("simulate --model llama3-70b --pp 2 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["status"], "oom");
  EXPECT_EQ(json["oom_rank"], 0);
  EXPECT_EQ(json["oom_time_s"], 0.0);
  CommandResult text = Pipette("simulate --model llama3-70b --pp 2");
  EXPECT_NE(text.out.find("status        oom (rank 0 holds"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("at t = 0.0000 ms"), std::string::npos) << text.out;

  // gpt3-1.3b fits with 4 sequences per microbatch; with 8, rank 0's in-flight activations
  // overflow the 80 GB part-way through the warm-up.
  run = Pipette("simulate --micro-batch-size 4 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["status"], "ok");
  run = Pipette("simulate --micro-batch-size 8 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["status"], "oom");
  EXPECT_EQ(json["oom_rank"], 0);
  const double device = json["device_memory_bytes"].get<double>();
  EXPECT_GT(json["oom_time_s"].get<double>(), 0);
  EXPECT_LT(json["oom_time_s"].get<double>(), json["pipeline_time_s"].get<double>());
  EXPECT_GT(json["oom_bytes"].get<double>(), device);
  EXPECT_GE(json["peak_memory_bytes"][0].get<double>(), json["oom_bytes"].get<double>());
  EXPECT_LT(json["peak_memory_bytes"][3].get<double>(), device);
}

TEST(Cli, SimulateRefusesMoreGpusThanTheClusterHas) {
  CommandResult run = Pipette("simulate --pp 16 -m 32");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("more than the 8 GPUs"), std::string::npos) << run.err;
  EXPECT_EQ(Pipette("simulate --pp 16 -m 32 --nodes 2 --format json").exit_code, 0);
  EXPECT_EQ(Pipette("simulate --model nosuch").exit_code, 2);
  EXPECT_EQ(Pipette("simulate --cluster nosuch").exit_code, 2);
}

}  // namespace

namespace pipette {
namespace {

nlohmann::json RunsJson(const std::string& db) {
  CommandResult runs = Pipette("runs --db " + db + " --format json");
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  return nlohmann::json::parse(runs.out);
}

TEST(CliStore, SimulateRecordsARunWithItsRowsByDefault) {
  std::filesystem::remove(ScratchDir() + "/pipette.db");
  CommandResult run = Pipette("simulate --dp 2 --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["db"], "pipette.db");
  const int id = json["run_id"].get<int>();
  const auto runs = RunsJson("pipette.db");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["id"], id);
  EXPECT_EQ(runs[0]["engine"], "sim");
  EXPECT_EQ(runs[0]["status"], "ok");
  EXPECT_EQ(runs[0]["config"]["dp"], 2);
  EXPECT_EQ(runs[0]["config"]["schedule"], "1f1b");
  // One X event per instruction (4 ranks of 1F1B, m = 8: 2*8 compute + sends + receives) plus
  // one all-reduce per gradient bucket (the default: ring, Megatron's 40 M-parameter buckets, at
  // least one per rank).
  const int buckets = json["grad_buckets"].get<int>();
  EXPECT_EQ(json["grad_reduce"], "ring");
  EXPECT_GT(buckets, 4);
  CommandResult chrome = Pipette("export --run last --format chrome");
  ASSERT_EQ(chrome.exit_code, 0) << chrome.err;
  int x = 0, allreduce = 0;
  const auto chrome_json = nlohmann::json::parse(chrome.out);
  for (const auto& e : chrome_json["traceEvents"]) {
    x += e["ph"] == "X";
    allreduce += e["name"] == "ALLREDUCE";
  }
  const int compute = 4 * 16, messages = 2 * (3 * 8 * 2);  // 3 links, 8 microbatches, 2 directions
  EXPECT_EQ(x, compute + messages + buckets);
  EXPECT_EQ(allreduce, buckets);
  CommandResult csv = Pipette("export --run " + std::to_string(id) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "0F0,0F1,0F2,0F3,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,0B5,0B6,0B7");
}

TEST(CliStore, BadInputWritesNothing) {
  std::filesystem::remove(ScratchDir() + "/bad.db");
  EXPECT_EQ(Pipette("simulate --db bad.db --pp 16").exit_code, 2);
  EXPECT_EQ(Pipette("simulate --db bad.db --trace everything").exit_code, 2);
  EXPECT_EQ(Pipette("simulate --db bad.db --model nosuch").exit_code, 2);
  // Nothing recorded (the file may exist, with no runs).
  if (std::filesystem::exists(ScratchDir() + "/bad.db")) {
    EXPECT_EQ(RunsJson("bad.db").size(), 0u);
  }
  // --no-db with --db would take one of them silently.
  CommandResult both = Pipette("simulate --no-db --db nodb.db");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--db excludes --no-db"), std::string::npos) << both.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/nodb.db"));
  CommandResult missing = Pipette("runs --db nosuch.db");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--db = 'nosuch.db'"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/nosuch.db"));
}

TEST(CliStore, TraceLevelsChooseTheRows) {
  std::filesystem::remove(ScratchDir() + "/levels.db");
  for (const char* level : {"none", "summary", "full"}) {
    ASSERT_EQ(
        Pipette(std::string("simulate --db levels.db --dp 2 --grad-reduce analytic --trace ") +
                level)
            .exit_code,
        0);
  }
  // none: no events; summary: the all-reduces only (analytic: one per rank); full: everything.
  EXPECT_EQ(Pipette("export --db levels.db --run 1").exit_code, 2);
  CommandResult summary = Pipette("export --db levels.db --run 2");
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  int x = 0;
  const auto summary_json = nlohmann::json::parse(summary.out);
  for (const auto& e : summary_json["traceEvents"]) x += e["ph"] == "X";
  EXPECT_EQ(x, 4);
  CommandResult full = Pipette("export --db levels.db --run 3");
  ASSERT_EQ(full.exit_code, 0);
  EXPECT_GT(full.out.size(), 10 * summary.out.size());
}

// Concurrent writers: tests/cli/store_cli_test.cc
// (StoreCli.ConcurrentCreatorsOfANewDatabaseAllRecord).

TEST(CliStore, AProcessKilledMidWriteLeavesARunningRunWithNoRowsThatRepairFails) {
  std::filesystem::remove(ScratchDir() + "/killed.db");
  ASSERT_EQ(Pipette("simulate --db killed.db").exit_code, 0);
  // The second run dies (SIGKILL) after writing 20 of its event rows inside its transaction.
  CommandResult killed =
      Pipette("--version >/dev/null; PIPETTE_FAULT_KILL_DURING_WRITE=20 " +
              std::string(PIPETTE_BINARY) + " simulate --db killed.db; echo exit=$?");
  EXPECT_NE(killed.out.find("exit=137"), std::string::npos) << killed.out << killed.err;
  auto runs = RunsJson("killed.db");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["status"], "ok");
  EXPECT_EQ(runs[1]["status"], "running");
  EXPECT_EQ(Pipette("export --db killed.db --run 2").exit_code, 2) << "no rows of the dead run";
  CommandResult last = Pipette("export --db killed.db --run last --format csv");
  EXPECT_EQ(last.exit_code, 0) << "last is the newest finished run";
  CommandResult repair = Pipette("runs --db killed.db --repair");
  ASSERT_EQ(repair.exit_code, 0) << repair.err;
  EXPECT_NE(repair.err.find("marked 1 stale run failed"), std::string::npos) << repair.err;
  runs = RunsJson("killed.db");
  EXPECT_EQ(runs[1]["status"], "failed");
  EXPECT_EQ(runs[0]["status"], "ok");
}

// ---- pipette train (one process; the mpirun tests are in tests/cpu/train_mpi_test.cc) ----------

TEST(Train, PipelineWithoutMpirunSaysHowToLaunchIt) {
  const auto run = Pipette("train -p 4 --no-db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("needs 4 processes"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("mpirun -np 4"), std::string::npos) << run.err;
}

TEST(Train, SingleProcessRunLowersTheLossAndReportsThroughput) {
  const auto run = Pipette("train --steps 4 --no-db --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  ASSERT_EQ(json["losses"].size(), 4u);
  EXPECT_NEAR(json["losses"][0].get<double>(), std::log(64.0), 0.05);  // untrained: uniform
  EXPECT_LT(json["losses"][3].get<double>(), json["losses"][0].get<double>() - 0.1);
  EXPECT_EQ(json["step_time_s"].size(), 4u);
  EXPECT_GT(json["tokens_per_s"].get<double>(), 0);
  EXPECT_EQ(json["tokens_per_step"], 8 * 4 * 32);
}

// Every instruction of the first --trace-steps steps lands in the database; losses cover all.
TEST(Train, TraceStepsBoundsTheRecordedEvents) {
  const auto run = Pipette("train --steps 3 --trace-steps 1 --db trace.db --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["losses"].size(), 3u);
  auto db = ExperimentDb::Open(ScratchDir() + "/trace.db");
  ASSERT_TRUE(db.ok()) << db.status().message();
  const auto runs = db->ListRuns();
  ASSERT_TRUE(runs.ok());
  const auto data = db->LoadRun(runs->back().id);
  ASSERT_TRUE(data.ok());
  // 1F1B with p = 1 and m = 8: one F and one B per microbatch, no messages, and the parameter
  // update (OPTIMIZER); step 0 only.
  ASSERT_EQ(data->events.size(), 17u);
  for (const EventRow& e : data->events) EXPECT_EQ(e.step, 0);
  const EventRow& update = data->events.back();
  EXPECT_EQ(update.kind, EventKind::kOptimizer);
  EXPECT_EQ(update.instr_id, -1);
  EXPECT_GE(update.start_s, data->events[15].end_s) << "the update follows the last backward";
  EXPECT_GT(update.end_s, update.start_s);
  EXPECT_GT(data->Metric("loss[2]"), 0);
}

TEST(Train, BadInputNamesTheOption) {
  // A RoPE preset without a context length needs --seq-len.
  auto run = Pipette("train --model llama3-8b --no-db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--seq-len: model 'llama3-8b' uses rotary positions and gives no context "
                         "length (max_positions); pass --seq-len"),
            std::string::npos)
      << run.err;
  run = Pipette("train --schedule nope --no-db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("nope"), std::string::npos) << run.err;
  run = Pipette("train --seq-len 64 --no-db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--seq-len 64"), std::string::npos) << run.err;
  run = Pipette("train --lr 0 --db bad.db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/bad.db"));  // nothing written
}

}  // namespace
}  // namespace pipette
