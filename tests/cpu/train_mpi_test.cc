// `pipette train` under mpirun (label mpi): every schedule's gradients and parameters equal the
// unpipelined reference on 2 and 4 ranks, with data parallelism and tied embeddings; a failing or
// hung rank ends the whole job within a bounded time; mismatched ranks are refused; the run lands
// in the database with the simulator's instruction ids and plots.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "../cli/pipette_runner.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/experiment_db.h"

namespace pipette {
namespace {

using testing::CommandResult;
using testing::Shell;

// mpirun with the flags a 2-core CI machine running as root needs.
std::string Launcher() {
  return std::string(PIPETTE_MPIEXEC) + " --oversubscribe" +
         (geteuid() == 0 ? " --allow-run-as-root" : "");
}

// `mpirun -np N pipette train ARGS`.
CommandResult Mpirun(int np, const std::string& args) {
  return Shell(Launcher() + " -np " + std::to_string(np) + " " + PIPETTE_BINARY + " train " + args);
}

nlohmann::json LastJsonLine(const std::string& out) {
  const std::size_t start = out.rfind("\n{");
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

struct Case {
  std::string schedule;
  int np;
  std::string args;  // -p, --dp, -m, -v, --model
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.schedule << " np=" << c.np << " " << c.args;
}

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.schedule + "_np" + std::to_string(info.param.np);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name + "_" + std::to_string(info.index);
}

class Equivalence : public ::testing::TestWithParam<Case> {};

// One step's gradients tensor by tensor, and after 3 steps the parameters, within 1e-5 relative
// of the single-process unpipelined reference on the same global batches.
TEST_P(Equivalence, GradientsAndParametersMatchTheUnpipelinedReference) {
  const Case& c = GetParam();
  const CommandResult run = Mpirun(c.np, "--schedule " + c.schedule + " " + c.args +
                                             " --steps 3 --verify --format json --no-db");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const nlohmann::json json = LastJsonLine(run.out);
  EXPECT_EQ(json["status"], "ok");
  const nlohmann::json& verify = json["verify"];
  EXPECT_LT(verify["grad_rel_err"].get<double>(), 1e-5) << verify.dump();
  EXPECT_LT(verify["param_rel_err"].get<double>(), 1e-5) << verify.dump();
  EXPECT_LT(verify["loss_diff"].get<double>(), 1e-5) << verify.dump();
  EXPECT_EQ(json["losses"].size(), 3u);
  EXPECT_EQ(json["step_time_s"].size(), 3u);
  EXPECT_GT(json["tokens_per_s"].get<double>(), 0);
}

std::vector<Case> AllCases() {
  const std::vector<std::string> schedules = {"gpipe",
                                              "1f1b",
                                              "eager-1f1b",
                                              "zb-h1",
                                              "zb-h2",
                                              "interleaved-1f1b",
                                              "interleaved-1f1b-plus-one",
                                              "kimi-k2",
                                              "interleaved-gpipe",
                                              "interleaved-zb",
                                              "zbv",
                                              "dualpipe",
                                              "dualpipe-v",
                                              "v-half",
                                              "v-min"};
  std::vector<Case> cases;
  for (const std::string& s : schedules) {
    cases.push_back({s, 2, "-p 2 -m 4"});
    cases.push_back({s, 4, "-p 4 -m 8"});
  }
  // Deeper interleaving, odd microbatch counts, data parallelism, a tied LM head.
  cases.push_back({"interleaved-1f1b", 2, "-p 2 -v 3 -m 6"});
  cases.push_back({"interleaved-zb", 2, "-p 2 -v 3 -m 4"});
  // Sizes only PyTorch's interleaved grouping runs: m = p+1 (one round of 3) and m < p.
  cases.push_back({"interleaved-1f1b", 2, "-p 2 -v 2 -m 3"});
  cases.push_back({"interleaved-1f1b", 4, "-p 4 -v 2 -m 3"});
  cases.push_back({"1f1b", 2, "-p 2 -m 3"});
  cases.push_back({"zb-h1", 4, "-p 2 --dp 2 -m 4"});
  cases.push_back({"dualpipe", 4, "-p 2 --dp 2 -m 4"});
  cases.push_back({"zbv", 4, "-p 2 --dp 2 -m 4 --model tiny-tied"});
  cases.push_back({"1f1b", 4, "-p 4 -m 4 --model tiny-tied"});
  cases.push_back({"dualpipe-v", 2, "-p 2 -m 4 --model tiny-tied"});
  cases.push_back(
      {"interleaved-1f1b", 2, "-p 2 -m 4 --model " PIPETTE_MODEL_DATA_DIR "/gpt-small.toml"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Schedules, Equivalence, ::testing::ValuesIn(AllCases()), Name);

// The Llama block (RoPE, RMSNorm, SwiGLU, grouped-query attention): every schedule on 2 and 4
// ranks within the same tolerance as GPT, and interleaving, data parallelism, a tied head and a
// Llama-style model file.
std::vector<Case> LlamaCases() {
  std::vector<Case> cases;
  for (const Case& c : AllCases()) {
    if (c.args == "-p 2 -m 4" || c.args == "-p 4 -m 8") {
      cases.push_back({c.schedule, c.np, c.args + " --model tiny-llama"});
    }
  }
  cases.push_back({"interleaved-1f1b", 2, "-p 2 -v 3 -m 6 --model tiny-llama"});
  cases.push_back({"zb-h1", 4, "-p 2 --dp 2 -m 4 --model tiny-llama"});
  cases.push_back({"zbv", 4, "-p 2 --dp 2 -m 4 --model tiny-llama-tied"});
  cases.push_back({"dualpipe-v", 2, "-p 2 -m 4 --model tiny-llama-tied"});
  cases.push_back(
      {"1f1b", 2, "-p 2 -m 4 --seq-len 16 --model " PIPETTE_MODEL_DATA_DIR "/llama-small.toml"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Llama, Equivalence, ::testing::ValuesIn(LlamaCases()), Name);

// Variable-length microbatches (--microbatch-seqlens, each at most the tiny models' 32 tokens):
// every schedule on 2 and 4 ranks, and interleaving, data parallelism, a tied head and the Llama
// block (RoPE positions restart in every sequence), against the reference that runs each distinct
// length as one batch and weights the loss per token.
std::vector<Case> VariableLengthCases() {
  std::vector<Case> cases;
  for (const Case& c : AllCases()) {
    if (c.args == "-p 2 -m 4") {
      cases.push_back({c.schedule, c.np, c.args + " --microbatch-seqlens 32,7,20,13"});
    } else if (c.args == "-p 4 -m 8") {
      cases.push_back({c.schedule, c.np, c.args + " --microbatch-seqlens 5,32,17,32,9,24,1,30"});
    }
  }
  cases.push_back({"interleaved-1f1b", 2, "-p 2 -v 3 -m 6 --microbatch-seqlens 9,32,3,16,32,11"});
  cases.push_back({"zb-h1", 4, "-p 2 --dp 2 -m 4 --microbatch-seqlens 12,32,4,25"});
  cases.push_back({"zbv", 4, "-p 2 --dp 2 -m 4 --model tiny-tied --microbatch-seqlens 6,31,8,8"});
  cases.push_back({"1f1b", 2, "-p 2 -m 4 --model tiny-llama --microbatch-seqlens 32,7,20,13"});
  cases.push_back(
      {"dualpipe-v", 2, "-p 2 -m 4 --model tiny-llama-tied --microbatch-seqlens 3,29,32,10"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(VariableLength, Equivalence, ::testing::ValuesIn(VariableLengthCases()),
                         Name);

CommandResult TrainJson(const std::string& args) {
  return Mpirun(2, args + " --steps 3 --verify --format json --no-db");
}

// Microbatches of 16 tokens in a run planned for 32 are the run planned for 16: the same prefixes
// of the same sequences, the same per-token mean loss (each microbatch's mean weighted 16/32, the
// step's sum divided by 4 x 16/32) and gradient scale (1 / 64 tokens). A loss normalised per
// microbatch, or a gradient scaled by the planned 128 tokens, would differ from step 2 on.
TEST(VariableLength, ShortMicrobatchesEqualAShorterSeqLen) {
  const CommandResult shorter = TrainJson("-p 2 -m 4 --schedule 1f1b --seq-len 16");
  const CommandResult lists =
      TrainJson("-p 2 -m 4 --schedule 1f1b --microbatch-seqlens 16,16,16,16");
  ASSERT_EQ(shorter.exit_code, 0) << shorter.err;
  ASSERT_EQ(lists.exit_code, 0) << lists.err;
  const nlohmann::json a = LastJsonLine(shorter.out), b = LastJsonLine(lists.out);
  EXPECT_EQ(b["tokens_per_step"], 4 * 4 * 16);
  ASSERT_EQ(a["losses"].size(), 3u);
  ASSERT_EQ(b["losses"].size(), 3u);
  for (std::size_t s = 0; s < 3; ++s) {
    EXPECT_NEAR(a["losses"][s].get<double>(), b["losses"][s].get<double>(), 1e-6) << s;
  }
}

// A step's tokens (and so tokens/s) are the microbatch size times the sum of the lengths.
TEST(VariableLength, TokensPerStepAreTheSumOfTheLengths) {
  const CommandResult run = TrainJson("-p 2 -m 4 --schedule zb-h1 --microbatch-seqlens 32,7,20,13");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(LastJsonLine(run.out)["tokens_per_step"], 4 * (32 + 7 + 20 + 13));
}

TEST(VariableLength, ALengthBeyondSeqLenIsRefused) {
  const CommandResult run = Mpirun(2, "-p 2 -m 4 --microbatch-seqlens 32,33,8,8 --no-db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--microbatch-seqlens: microbatch 1 has length 33: must be in [1, 32]"),
            std::string::npos)
      << run.err;
}

TEST(VariableLength, TheWrongNumberOfLengthsIsRefused) {
  const CommandResult run = Mpirun(2, "-p 2 -m 4 --microbatch-seqlens 32,8,8 --no-db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--microbatch-seqlens"), std::string::npos) << run.err;
}

// A slowed rank (--rank-speed 1=0.25) follows each compute of t CPU seconds with a busy wait of
// 3t CPU seconds. Both are measured on the rank's own CPU clock, which a loaded machine does not
// advance while the rank waits for a core, so the accounting is exact up to one clock read per
// compute; the math is untouched: the losses and the gradients' error against the reference are
// bit for bit those of the run at full speed.
TEST(RankSpeed, ASlowedRankBusyWaitsThreeTimesItsWorkAndComputesTheSame) {
  const std::string args = "-p 2 -m 4 --schedule 1f1b";
  const CommandResult even = TrainJson(args);
  const CommandResult slowed = TrainJson(args + " --rank-speed 1=0.25");
  ASSERT_EQ(even.exit_code, 0) << even.err;
  ASSERT_EQ(slowed.exit_code, 0) << slowed.err;
  const nlohmann::json a = LastJsonLine(even.out), b = LastJsonLine(slowed.out);
  EXPECT_EQ(a["losses"], b["losses"]);
  EXPECT_EQ(a["verify"]["grad_rel_err"], b["verify"]["grad_rel_err"]);
  EXPECT_EQ(a["verify"]["param_rel_err"], b["verify"]["param_rel_err"]);
  EXPECT_EQ(a["slowdown_s"], nlohmann::json::array({0.0, 0.0}));
  EXPECT_EQ(b["slowdown_s"][0].get<double>(), 0.0);
  const double work = b["work_s"][1].get<double>(), wait = b["slowdown_s"][1].get<double>();
  EXPECT_GT(work, 0);
  const int computes = 3 * 2 * 4;  // steps x {F, B} x microbatches on rank 1
  EXPECT_GE(wait, 3 * work);
  EXPECT_LE(wait, 3 * work + computes * 1e-3) << work;
}

// The busy wait is part of the recorded compute events (what `compare` and `simulate
// --costs-from` read): rank 1's compute events last at least its work and busy waits together, in
// wall time, which a CPU clock never outruns; and the run records the speeds it ran at.
TEST(RankSpeed, TheBusyWaitIsInsideTheRecordedComputesAndTheSpeedIsRecorded) {
  const CommandResult run = Mpirun(
      2, "-p 2 -m 4 --schedule zb-h1 --steps 2 --rank-speed 1=0.5 --db speed.db --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = LastJsonLine(run.out);
  auto db = ExperimentDb::Open(testing::ScratchDir() + "/speed.db");
  ASSERT_TRUE(db.ok()) << db.status().message();
  const auto data = db->LoadRun(json["run_id"].get<std::int64_t>());
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(nlohmann::json::parse(data->run.config)["rank_speed"], "1=0.5");
  double rank1_compute = 0;
  for (const EventRow& e : data->events) {
    if (e.rank == 1 &&
        (e.kind == EventKind::kF || e.kind == EventKind::kI || e.kind == EventKind::kW)) {
      rank1_compute += e.end_s - e.start_s;
    }
  }
  const double work = data->Metric("compute_work_s[1]"), wait = data->Metric("slowdown_s[1]");
  EXPECT_GT(work, 0);
  EXPECT_GE(wait, work);
  EXPECT_GE(rank1_compute, work + wait);
  EXPECT_EQ(data->Metric("slowdown_s[0]"), 0);
}

TEST(RankSpeed, ARankOutsideThePipelineIsRefused) {
  const CommandResult run = Mpirun(2, "-p 2 -m 4 --rank-speed 2=0.5 --no-db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--rank-speed"), std::string::npos) << run.err;
}

std::string FaultyRun(const std::string& fault, const std::string& args) {
  return "PIPETTE_FAULT_RANK=1 PIPETTE_FAULT=" + fault + " " + Launcher() + " -np 2 " +
         PIPETTE_BINARY + " train " + args;
}

// The check has teeth: a rank that skips one weight gradient fails --verify.
TEST(Verify, CatchesAMissingWeightGradient) {
  const CommandResult faulty =
      Shell(FaultyRun("skip-w", "-p 2 -m 4 --schedule zb-h1 --steps 2 --verify --no-db"));
  EXPECT_EQ(faulty.exit_code, 1) << faulty.err;
  EXPECT_NE(faulty.err.find("differs from the unpipelined reference"), std::string::npos)
      << faulty.err;
}

double SecondsOf(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(RankFailure, AKilledRankEndsEveryRankWithAnError) {
  CommandResult run;
  const double seconds = SecondsOf(
      [&] { run = Shell(FaultyRun("kill", "-p 2 --steps 50 --no-db --peer-timeout 20")); });
  EXPECT_NE(run.exit_code, 0);
  EXPECT_LT(seconds, 30);
  EXPECT_NE(run.err.find("signal 9"), std::string::npos) << run.err;
}

TEST(RankFailure, AHungRankEndsTheRunAfterThePeerTimeout) {
  CommandResult run;
  const double seconds = SecondsOf(
      [&] { run = Shell(FaultyRun("hang", "-p 2 --steps 50 --no-db --peer-timeout 2")); });
  EXPECT_NE(run.exit_code, 0);
  EXPECT_GE(seconds, 2);
  EXPECT_LT(seconds, 30);
  EXPECT_NE(run.err.find("rank 0 waited"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("RECV"), std::string::npos) << run.err;  // names what it waited for
}

// The watchdog ends rank 0 without unwinding; it first marks rank 0's recorded run failed with what
// it waited for, instead of leaving it `running` until `pipette runs --repair`.
TEST(RankFailure, AWatchdogExpiryOnRankZeroEndsItsRunFailed) {
  const std::string db = testing::ScratchDir() + "/watchdog.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  const CommandResult run = Shell(FaultyRun("hang", "-p 2 --steps 50 --peer-timeout 2 --db " + db));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("rank 0 waited"), std::string::npos) << run.err;
  Result<ExperimentDb> store = ExperimentDb::OpenReadOnly(db);
  ASSERT_TRUE(store.ok()) << store.status().message();
  const Result<std::vector<RunRecord>> runs = store->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().status, kRunFailed);
  EXPECT_NE(runs->front().error.find("rank 0 waited"), std::string::npos) << runs->front().error;
  EXPECT_NE(runs->front().error.find("(--peer-timeout 2 s)"), std::string::npos)
      << runs->front().error;
}

// The rows of a run that a killed or hung rank cut short: its status and error, the steps in its
// events, and its steps_recorded.
struct CutShortRun {
  RunRecord run;
  std::set<int> event_steps;
  RunData data;
};

CutShortRun ReadCutShortRun(const std::string& db) {
  Result<ExperimentDb> store = ExperimentDb::OpenReadOnly(db);
  EXPECT_TRUE(store.ok()) << store.status().message();
  CutShortRun cut;
  if (!store.ok()) return cut;
  Result<RunData> data = store->LoadRun(1);
  EXPECT_TRUE(data.ok()) << data.status().message();
  if (!data.ok()) return cut;
  cut.run = data->run;
  for (const EventRow& e : data->events) cut.event_steps.insert(e.step);
  cut.data = std::move(*data);
  return cut;
}

// Rank 1 is killed (SIGKILL) at its first compute of step 4, after the barrier that starts it:
// steps 1-3 are finished on every rank, and recorded as they finished. mpirun then ends rank 0
// (SIGTERM) before it can write the run's end; `runs --repair` fails the run and says how many
// steps it kept, with every event, loss and time of those steps.
TEST(RankFailure, AKilledRankKeepsEveryFinishedStepInTheDatabase) {
  const std::string db = testing::ScratchDir() + "/killed.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  const CommandResult run = Shell(
      "PIPETTE_FAULT_STEP=3 " + FaultyRun("kill", "-p 2 --steps 20 --peer-timeout 20 --db " + db));
  EXPECT_NE(run.exit_code, 0);
  const CommandResult repair = Shell(std::string(PIPETTE_BINARY) + " runs --repair --db " + db);
  EXPECT_EQ(repair.exit_code, 0) << repair.err;
  const CutShortRun cut = ReadCutShortRun(db);
  EXPECT_EQ(cut.run.status, kRunFailed);
  EXPECT_NE(cut.run.error.find("it kept its first 3 steps"), std::string::npos) << cut.run.error;
  if (cut.run.error.find("stale") != std::string::npos) {  // failed by the repair, as expected
    EXPECT_NE(repair.err.find("run 1 kept its first 3 steps"), std::string::npos) << repair.err;
  }
  EXPECT_EQ(cut.event_steps, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(cut.data.Metric("steps_recorded", -1), 3);
  for (int k = 0; k < 3; ++k) {
    EXPECT_GT(cut.data.Metric(fmt::format("loss[{}]", k), 0), 1) << k;
    EXPECT_GT(cut.data.Metric(fmt::format("step_times_s[{}]", k), 0), 0) << k;
  }
  EXPECT_EQ(cut.data.Metric("loss[3]", -1), -1);
  // Every step kept all of its instructions: the same events per step, on both ranks.
  std::map<std::pair<int, int>, int> per_rank_step;
  for (const EventRow& e : cut.data.events) ++per_rank_step[{e.rank, e.step}];
  ASSERT_EQ(per_rank_step.size(), 6u);
  for (const int rank : {0, 1}) {
    const int first = per_rank_step[std::make_pair(rank, 0)];
    EXPECT_GT(first, 0);
    EXPECT_EQ(per_rank_step[std::make_pair(rank, 1)], first);
    EXPECT_EQ(per_rank_step[std::make_pair(rank, 2)], first);
  }
  EXPECT_FALSE(cut.data.memory.empty());
}

// A rank that hangs in step 3: rank 0's watchdog fails the run itself, keeping steps 1 and 2.
TEST(RankFailure, AHungRankLeavesARunFailedWithTheStepsItFinished) {
  const std::string db = testing::ScratchDir() + "/hung.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  const CommandResult run = Shell("PIPETTE_FAULT_STEP=2 " +
                                  FaultyRun("hang", "-p 2 --steps 20 --peer-timeout 2 --db " + db));
  EXPECT_NE(run.exit_code, 0);
  const CutShortRun cut = ReadCutShortRun(db);
  EXPECT_EQ(cut.run.status, kRunFailed);
  EXPECT_NE(cut.run.error.find("rank 0 waited"), std::string::npos) << cut.run.error;
  EXPECT_NE(cut.run.error.find("it kept its first 2 steps"), std::string::npos) << cut.run.error;
  EXPECT_EQ(cut.event_steps, (std::set<int>{0, 1}));
}

// An MPMD launch whose ranks got different options: every rank refuses before training.
TEST(RankFailure, RanksWithDifferentOptionsAreRefused) {
  const CommandResult run =
      Shell(Launcher() + " -np 1 " + PIPETTE_BINARY + " train -p 2 -m 8 --no-db : -np 1 " +
            PIPETTE_BINARY + " train -p 2 -m 4 --no-db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("rank 1 was started with m = 4 but rank 0 with m = 8"), std::string::npos)
      << run.err;
}

TEST(RankFailure, ABadOptionOnOneRankIsReportedWithItsRank) {
  const CommandResult run =
      Shell(Launcher() + " -np 1 " + PIPETTE_BINARY + " train -p 2 --no-db : -np 1 " +
            PIPETTE_BINARY + " train -p 2 --lr -1 --no-db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("rank 1 of 2: --lr -1"), std::string::npos) << run.err;
}

// A rank that cannot read its model file (an I/O failure, not a bad option) ends every rank with
// that failure's exit code, 1, as a single-process command would.
TEST(RankFailure, AnUnreadableModelFileOnOneRankIsAFailureNotBadInput) {
  const std::filesystem::path loop =
      std::filesystem::temp_directory_path() / fmt::format("pipette-loop-{}.toml", getpid());
  std::filesystem::remove(loop);
  std::filesystem::create_symlink(loop, loop);  // reading it fails: too many levels of links
  const CommandResult run =
      Shell(Launcher() + " -np 1 " + PIPETTE_BINARY + " train -p 2 --no-db : -np 1 " +
            PIPETTE_BINARY + " train -p 2 --model " + loop.string() + " --no-db");
  std::filesystem::remove(loop);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("rank 1 of 2: model file"), std::string::npos) << run.err;
}

TEST(RankFailure, WrongProcessCountNamesTheLaunch) {
  const CommandResult run = Mpirun(3, "-p 2 --no-db");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("needs 2 ranks but mpirun started 3"), std::string::npos) << run.err;
}

// The run is recorded with engine cpu, one event per executed instruction carrying the same
// (rank, instr_id, kind, stage, microbatch) as the lowered program the simulator runs, and the
// timeline plot draws it.
TEST(TrainDatabase, RecordsTheProgramsInstructionsAndPlots) {
  const CommandResult run = Mpirun(2, "-p 2 -m 4 --schedule zb-h1 --steps 2 --db train.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto db = ExperimentDb::Open(testing::ScratchDir() + "/train.db");
  ASSERT_TRUE(db.ok()) << db.status().message();
  const auto runs = db->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_FALSE(runs->empty());
  const auto data = db->LoadRun(runs->back().id);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->run.engine, "cpu");
  EXPECT_EQ(data->run.status, "ok");
  EXPECT_GT(data->Metric("tokens_per_s"), 0);
  EXPECT_GT(data->Metric("loss[1]"), 0);
  EXPECT_GT(data->Metric("peak_memory_bytes[1]"), 0);
  EXPECT_FALSE(data->memory.empty());
  for (const char* name : {"stage_f_s[0]", "stage_i_s[1]", "stage_w_s[1]"}) {
    EXPECT_GT(data->Metric(name), 0) << name;  // measured per-stage costs (ZB-H1 splits I and W)
  }
  EXPECT_EQ(data->Metric("stage_b_s[0]", -1), -1);  // ZB-H1 has no full backward

  const Program program = Lower(MakeSchedule("zb-h1", {.p = 2, .m = 4}).value()).value();
  std::size_t matched = 0, compute = 0;
  for (const EventRow& e : data->events) {
    if (e.instr_id < 0) continue;  // all-reduce rows
    ASSERT_LT(e.instr_id, static_cast<int>(program.ranks[e.rank].instructions.size()));
    const Action& a = program.ranks[e.rank].instructions[e.instr_id].action;
    EXPECT_EQ(e.stage, a.stage);
    EXPECT_EQ(e.microbatch, a.microbatch);
    EXPECT_LE(e.start_s, e.end_s);
    ++matched;
    if (e.kind == EventKind::kF || e.kind == EventKind::kI || e.kind == EventKind::kW) ++compute;
  }
  EXPECT_EQ(matched, 2 * program.num_instructions());  // 2 steps, no overlapped cells
  EXPECT_EQ(compute, 2u * 3 * 2 * 4);                  // steps x {F,I,W} x stages x microbatches

  const CommandResult plot = testing::Pipette("plot timeline --db train.db --run last --out t.png");
  EXPECT_EQ(plot.exit_code, 0) << plot.err;
  EXPECT_GT(std::filesystem::file_size(testing::ScratchDir() + "/t.png"), 1000u);
}

// A real run's kernel profile, fitted (pipette fit), listed (fits), and the fit predicting the
// run's own configuration and another one; what a fit does not model is refused (exit 2).
TEST(TrainDatabase, AFittedRunPredictsConfigurationsAndRefusesOtherFamilies) {
  const CommandResult run =
      Mpirun(2, "-p 2 -m 4 --schedule 1f1b --steps 4 --trace-steps 4 --db fit.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto db = ExperimentDb::Open(testing::ScratchDir() + "/fit.db");
  ASSERT_TRUE(db.ok());
  const RunData data = *db->LoadRun(db->ListRuns({})->back().id);
  EXPECT_EQ(data.Metric("kernel_profile_steps"), 3);  // steps 1..3
  EXPECT_GT(data.Metric("kernel_module_s[attn.F]"), 0);
  EXPECT_GT(data.Metric("kernel_activation_s"), 0);
  const std::string id = std::to_string(data.run.id);

  const CommandResult fit = testing::Pipette("fit " + id + " --db fit.db --format json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const nlohmann::json json = nlohmann::json::parse(fit.out);
  EXPECT_EQ(json["family"]["style"], "gpt");
  EXPECT_EQ(json["parameters"].size(), 13u);
  EXPECT_EQ(json["parameters"][12]["name"], "gemm_table");
  EXPECT_EQ(json["parameters"][12]["status"], "unused");  // no --calibration
  EXPECT_EQ(json["parameters"][0]["name"], "gemm_flops");
  EXPECT_EQ(json["parameters"][0]["status"], "fitted");
  EXPECT_GT(json["parameters"][0]["value"].get<double>(), 0);
  const CommandResult list = testing::Pipette("fits --db fit.db");
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(" cpu "), std::string::npos) << list.out;

  // Its own configuration, and an unseen one (another schedule and m, a wider micro-batch).
  const CommandResult own =
      testing::Pipette("simulate --fit latest --costs-from " + id + " --db fit.db --format json");
  ASSERT_EQ(own.exit_code, 0) << own.err;
  const nlohmann::json predicted = LastJsonLine(own.out);
  EXPECT_EQ(predicted["prediction"]["fit"], 1);
  EXPECT_EQ(predicted["costs_from"], data.run.id);
  // As many steps as the run traced, each a positive time (how close they come is the study's
  // question, experiments/predict-unseen/, not a timed test's: mpi tests share the cores).
  const auto steps = predicted["step_time_s"];
  ASSERT_EQ(steps.size(), 4u);
  for (const auto& t : steps) EXPECT_GT(t.get<double>(), 0);
  const CommandResult unseen = testing::Pipette(
      "simulate --fit 1 --model tiny --schedule zb-h1 -p 2 -m 8 --micro-batch-size 2 --db fit.db");
  EXPECT_EQ(unseen.exit_code, 0) << unseen.err;

  const std::pair<const char*, const char*> refused[] = {
      {"simulate --fit 1 --model tiny-llama -p 2 --db fit.db", "outside the fitted family"},
      {"simulate --fit 1 --model tiny --cluster dgx-h100 --db fit.db", "--cluster with --fit"},
      {"simulate --fit 1 --model tiny -p 2 --dp 2 --db fit.db", "give --calibration"},
      {"simulate --fit 7 --model tiny --db fit.db", "no such fit"},
      {"simulate --fit x --model tiny --db fit.db", "must be a fit id"},
      {"simulate --fit 1 --db fit.db", "give the configuration's --model"}};
  for (const auto& [args, why] : refused) {
    const CommandResult r = testing::Pipette(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << args << "\n" << r.err;
  }
  const CommandResult sim =
      testing::Pipette("simulate --fit 1 --costs-from " + id + " --db fit.db --format json");
  ASSERT_EQ(sim.exit_code, 0);
  const CommandResult refit = testing::Pipette(
      "fit " + std::to_string(LastJsonLine(sim.out)["run_id"].get<int>()) + " --db fit.db");
  EXPECT_EQ(refit.exit_code, 2) << refit.err;  // a simulation is no measured work
  EXPECT_NE(refit.err.find(": engine sim: only a real engine's training run"), std::string::npos)
      << refit.err;
}

}  // namespace
}  // namespace pipette
