// End to end: `pipette simulate --grad-reduce analytic|ring|tree --grad-overlap
// --grad-bucket-params N`. Bad values are refused with exit 2 naming the option and nothing is
// recorded; the run records what it resolved; one bucket per rank reduced as a simulated ring
// takes exactly the analytic ring's step; overlap never lengthens the step and, with two chunks
// per rank, shortens it.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipette_runner.h"

namespace pipette {
namespace {

using testing::CommandResult;
using testing::Pipette;
using testing::ScratchDir;

// gpt3-1.3b, pp 2 x dp 2 on one dgx-h100 node.
const std::string kJob = "simulate --pp 2 --dp 2 -m 4 ";

nlohmann::json Json(const std::string& args) {
  CommandResult run = Pipette(kJob + args + " --no-db --format json");
  EXPECT_EQ(run.exit_code, 0) << args << ": " << run.err;
  return run.exit_code == 0 ? nlohmann::json::parse(run.out) : nlohmann::json::object();
}

TEST(GradReduceCli, BadValuesAreRefusedNamingTheOptionAndNothingIsRecorded) {
  std::filesystem::remove(ScratchDir() + "/grad.db");
  const std::pair<std::string, std::string> cases[] = {
      {kJob + "--grad-reduce butterfly",
       "pipette simulate: --grad-reduce = butterfly: must be analytic, ring or tree\n"},
      {kJob + "--grad-reduce analytic --grad-overlap",
       "pipette simulate: --grad-overlap with --grad-reduce = analytic: the analytic reduction "
       "is one time after every replica's program; overlap needs ring or tree\n"},
      {kJob + "--grad-reduce tree --ideal-network",
       "pipette simulate: --grad-reduce = tree: needs a cluster (the ideal network simulates one "
       "replica, so only analytic applies)\n"},
      {kJob + "--grad-bucket-params -5",
       "pipette simulate: --grad-bucket-params = -5: must be a number of parameters >= 1 (0: "
       "Megatron's default)\n"},
      {"simulate -p 2 -m 4 --ideal-network --times F=1,I=1,W=1 --grad-overlap",
       "pipette simulate: --grad-overlap with --times: the data-parallel gradient reduction "
       "applies only to a model (--model, --dp)\n"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult run = Pipette(args + " --db grad.db");
    EXPECT_EQ(run.exit_code, 2) << args << ": " << run.err;
    EXPECT_EQ(run.err, message) << args;
  }
  // 1000-parameter buckets: hundreds of thousands per rank.
  CommandResult tiny = Pipette(kJob + "--grad-bucket-params 1000 --db grad.db");
  EXPECT_EQ(tiny.exit_code, 2) << tiny.err;
  EXPECT_NE(tiny.err.find("--grad-bucket-params = 1000: rank 0 would reduce"), std::string::npos)
      << tiny.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/grad.db"));
}

TEST(GradReduceCli, OneBucketPerRankAsARingTakesTheAnalyticStep) {
  // A bucket larger than any rank's gradients: each rank reduces once, after its program, as the
  // analytic model does; both replicas are alike, so the ring starts when the barrier would end.
  // pp 8 x dp 2 on two nodes: each replica's pipeline inside its node (NVLink), the rings over the
  // NICs, so no pipeline message shares a link with them. (With both replicas in one node, the
  // last stage's ring shares its NVLink port with its last gradient send and takes longer.)
  const std::string job = "simulate --pp 8 --dp 2 --nodes 2 -m 8 --no-db --format json ";
  CommandResult a = Pipette(job + "--grad-reduce analytic");
  CommandResult b = Pipette(job + "--grad-reduce ring --grad-bucket-params 100000000000");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json analytic = nlohmann::json::parse(a.out), ring = nlohmann::json::parse(b.out);
  EXPECT_EQ(ring["grad_buckets"], 8);
  const double want = analytic["step_time_s"].get<double>();
  EXPECT_NEAR(ring["step_time_s"].get<double>(), want, 1e-12 * want);
  for (int r = 0; r < 8; ++r) {
    EXPECT_NEAR(ring["allreduce_s"][r].get<double>(), analytic["allreduce_s"][r].get<double>(),
                1e-12);
  }
}

TEST(GradReduceCli, WithExpertParallelismTheExpertsRingRunsOverTheReplicasHoldingThem) {
  // moe-small, pp 8 x dp 4 x ep 2 on four nodes, one bucket per kind: each rank reduces its dense
  // gradients over the 4 replicas, then its experts' (1/ep of them per GPU) over the 2 replicas
  // with the same experts (d mod 2), as the analytic model does. Each pipeline stays in its node,
  // and the all-to-all is over by the time a rank reduces, so nothing shares the rings' NICs: the
  // simulated rings take exactly the analytic step. (Over all 4 replicas the experts' ring would
  // take 2 x 3 (alpha + S/(4 beta)) instead of 2 (alpha + S/(2 beta)).)
  const std::string job =
      "simulate --model moe-small --pp 8 --dp 4 --ep 2 --nodes 4 -m 8 --no-db "
      "--format json --grad-bucket-params 100000000000 ";
  CommandResult a = Pipette(job + "--grad-reduce analytic");
  CommandResult b = Pipette(job);  // ring, the default on a cluster
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json analytic = nlohmann::json::parse(a.out), ring = nlohmann::json::parse(b.out);
  EXPECT_EQ(ring["grad_reduce"], "ring");
  // Every rank holds MoE blocks: a dense and an experts bucket each.
  EXPECT_EQ(ring["grad_buckets"], 16);
  const double want = analytic["step_time_s"].get<double>();
  EXPECT_NEAR(ring["step_time_s"].get<double>(), want, 1e-12 * want);
  for (int r = 0; r < 8; ++r) {
    EXPECT_NEAR(ring["allreduce_s"][r].get<double>(), analytic["allreduce_s"][r].get<double>(),
                1e-12)
        << "rank " << r;
  }
}

// A cluster (with any flags after it) and the replicas that run on it for all.
struct PeriodCase {
  std::string cluster;
  int run;
};

// `job` + each case's cluster, with and without --every-replica: `run` of the `replicas` run for
// all, every replica runs with the flag, and every other number of the two runs is equal.
void ExpectAPeriodGivesTheSameRun(const std::string& job, const std::vector<PeriodCase>& cases,
                                  int replicas) {
  for (const PeriodCase& c : cases) {
    CommandResult a = Pipette(job + c.cluster);
    CommandResult b = Pipette(job + c.cluster + " --every-replica");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    nlohmann::json period = nlohmann::json::parse(a.out), all = nlohmann::json::parse(b.out);
    EXPECT_EQ(period["replicas_run"], c.run) << c.cluster;
    EXPECT_EQ(all["replicas_run"], replicas) << c.cluster;
    period.erase("replicas_run");
    all.erase("replicas_run");
    EXPECT_EQ(period, all) << c.cluster;
  }
}

TEST(GradReduceCli, APeriodOfReplicasRunsForAllOnEveryFabricAndGivesTheSameRun) {
  // llama2-7b pp 16 x dp 64 (1,024 GPUs, two nodes per replica), ring reduction: on the single
  // switch two replicas run for all (sim/replica_symmetry.h, ReplicaPeriod), on the 2:1 fat-tree (4
  // nodes per leaf) four, on the SuperPOD (32 nodes per scalable unit) 32. With --placement-order
  // tp,dp,pp eight replicas share each node, so one ring hop in eight crosses nodes: 16 run (with
  // 8, the last hop's image would stay inside its node). Every number of the run equals the run
  // of every replica.
  const std::string job =
      "simulate --model llama2-7b --pp 16 --dp 64 -m 8 --nodes 128 --no-db "
      "--format json --cluster ";
  ExpectAPeriodGivesTheSameRun(job,
                               {{"dgx-h100", 2},
                                {"dgx-h100-ft-2to1", 4},
                                {"dgx-h100-superpod", 32},
                                {"dgx-h100 --placement-order tp,dp,pp", 16}},
                               64);
}

TEST(GradReduceCli, AnAllToAllOverEveryReplicaFoldsOntoMirrorsAndGivesTheSameRun) {
  // deepseek-v3 pp 16 x dp 8 x ep 8 (DeepSeek-V3's own layout at an eighth of its replicas: two
  // nodes per replica, the all-to-all over every replica), ring reduction. On the single switch
  // two replicas run for all, each rank's messages to copies of its own replica sent to its
  // mirrors (sim/replica_symmetry.h). Every replica runs on the 2:1 fat-tree (four nodes per
  // leaf), where a message to another leaf crosses the leaves' uplinks and one inside it does
  // not, and in the SuperPOD's one scalable unit, whose rail leaves every replica's message from
  // stage 7 to 8 crosses (no shift moves them). Every number equals the run of every replica.
  const std::string job =
      "simulate --model deepseek-v3 --pp 16 --dp 8 --ep 8 -m 8 --nodes 16 --no-db --format json "
      "--cluster ";
  ExpectAPeriodGivesTheSameRun(
      job, {{"dgx-h100", 2}, {"dgx-h100-superpod", 8}, {"dgx-h100-ft-2to1", 8}}, 8);
}

TEST(GradReduceCli, OverlapShortensAnInterleavedStepAndTheRunRecordsItsSettings) {
  const std::string interleaved = "--schedule interleaved-1f1b -v 2 ";
  const nlohmann::json after = Json(interleaved + "--grad-reduce ring");
  const nlohmann::json overlapped = Json(interleaved + "--grad-reduce ring --grad-overlap");
  ASSERT_FALSE(after.empty());
  ASSERT_FALSE(overlapped.empty());
  EXPECT_EQ(after["grad_reduce"], "ring");
  EXPECT_EQ(overlapped["grad_overlap"], true);
  EXPECT_LT(overlapped["step_time_s"].get<double>(), after["step_time_s"].get<double>());
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT(overlapped["allreduce_exposed_s"][r].get<double>(),
              overlapped["allreduce_s"][r].get<double>());
  }
  // The default on a cluster is ring, and the configuration records the resolved bucket size.
  std::filesystem::remove(ScratchDir() + "/grad-config.db");
  CommandResult run = Pipette(kJob + "--db grad-config.db --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["grad_reduce"], "ring");
  CommandResult runs = Pipette("runs --db grad-config.db --format json");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const std::string listed = runs.out;
  EXPECT_NE(listed.find("grad_bucket_params"), std::string::npos) << listed;
  EXPECT_NE(listed.find("40000000"), std::string::npos) << listed;
}

}  // namespace
}  // namespace pipette
