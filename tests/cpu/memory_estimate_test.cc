// The CPU engine's memory is estimated from the plan (parameters at 16 bytes, activations of the
// microbatches in flight) and a run the machine cannot hold is refused with the figure and the
// machine's memory before anything is allocated.
#include "cpu/memory_estimate.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <numeric>
#include <string>

namespace pipette::cpu {
namespace {

TrainPlan MustPlan(TrainOptions options) {
  Result<TrainPlan> plan = PlanTraining(options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

TEST(TrainMemory, ParametersAtSixteenBytesAndActivationsOfTheMicrobatchesInFlight) {
  TrainOptions options;
  options.p = 2;
  options.m = 4;
  options.dp = 3;
  const TrainPlan plan = MustPlan(options);  // tiny, 1F1B: rank 0 holds 2 in flight, rank 1 one
  Result<TrainMemoryEstimate> e = EstimateTrainMemory(plan, false);
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_EQ(e->parameter_bytes.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_DOUBLE_EQ(e->parameter_bytes[r], 16.0 * plan.piece_params[r]) << r;
    EXPECT_GT(plan.piece_activation_bytes[r], 0);
  }
  EXPECT_DOUBLE_EQ(e->activation_bytes[0], 2.0 * plan.piece_activation_bytes[0]);
  EXPECT_DOUBLE_EQ(e->activation_bytes[1], 1.0 * plan.piece_activation_bytes[1]);
  EXPECT_EQ(std::accumulate(plan.piece_params.begin(), plan.piece_params.end(), std::int64_t{0}),
            210304);                    // tiny's parameters
  ASSERT_EQ(e->rank_bytes.size(), 6u);  // every rank of every replica
  EXPECT_DOUBLE_EQ(e->rank_bytes[0], 64e6 + 1.2 * (e->parameter_bytes[0] + e->activation_bytes[0]));
  EXPECT_DOUBLE_EQ(e->rank_bytes[2], e->rank_bytes[0]);  // replica 1, rank 0
  EXPECT_DOUBLE_EQ(e->reference_bytes, 0);
  Result<TrainMemoryEstimate> verified = EstimateTrainMemory(plan, true);
  ASSERT_TRUE(verified.ok());
  EXPECT_DOUBLE_EQ(
      verified->reference_bytes,
      16.0 * 210304 + 4.0 * 3 * (plan.piece_activation_bytes[0] + plan.piece_activation_bytes[1]));
  EXPECT_DOUBLE_EQ(verified->rank_bytes[0], e->rank_bytes[0] + 1.2 * verified->reference_bytes);
}

TEST(TrainMemory, Gpt3_175bIsRefusedWithTheFigureAndTheMachinesMemory) {
  // It grew to 12 GB before bad_alloc.
  TrainOptions options;
  options.model = "gpt3-175b";
  const TrainPlan plan = MustPlan(options);
  Result<TrainMemoryEstimate> e = EstimateTrainMemory(plan, false);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_NEAR(e->parameter_bytes[0], 16 * 175e9, 16 * 1e9);
  const Status refused = CheckTrainMemory(plan, *e, 1, {16e9, "a test"});
  ASSERT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message().rfind("--model gpt3-175b: training needs about 5.79 TB on this host "
                                    "(1 rank here; the largest, rank 0, 5.79 TB: parameters 2.79 "
                                    "TB at 16 bytes each",
                                    0),
            0u)
      << refused.message();
  EXPECT_NE(refused.message().find("but this machine has 16 GB (a test)"), std::string::npos)
      << refused.message();
  EXPECT_TRUE(CheckTrainMemory(plan, *e, 1, {6e12, "a big machine"}).ok());
}

TEST(TrainMemory, TheHostHoldsTheRanksStartedOnIt) {
  TrainOptions options;
  options.p = 2;
  options.m = 4;
  const TrainPlan plan = MustPlan(options);
  Result<TrainMemoryEstimate> e = EstimateTrainMemory(plan, false);
  ASSERT_TRUE(e.ok());
  const double both = e->rank_bytes[0] + e->rank_bytes[1];
  const double largest = std::max(e->rank_bytes[0], e->rank_bytes[1]);
  EXPECT_TRUE(CheckTrainMemory(plan, *e, 2, {both, "x"}).ok());
  EXPECT_FALSE(CheckTrainMemory(plan, *e, 2, {both - 1, "x"}).ok());
  EXPECT_TRUE(CheckTrainMemory(plan, *e, 1, {largest, "x"}).ok());  // one rank per host
  const Status refused = CheckTrainMemory(plan, *e, 2, {1e6, "x"});
  EXPECT_NE(refused.message().find("(2 ranks here; "), std::string::npos) << refused.message();
}

TEST(TrainMemory, MachineMemoryHonoursTheOverrideAndRejectsAMalformedOne) {
  ASSERT_EQ(setenv("PIPETTE_MEMORY_LIMIT_BYTES", "1.5e9", 1), 0);
  Result<AvailableMemory> set = MachineMemory();
  ASSERT_TRUE(set.ok());
  EXPECT_DOUBLE_EQ(set->bytes, 1.5e9);
  EXPECT_EQ(set->source, "PIPETTE_MEMORY_LIMIT_BYTES");
  for (const char* bad : {"", "abc", "-1", "0", "inf", "12GB"}) {
    ASSERT_EQ(setenv("PIPETTE_MEMORY_LIMIT_BYTES", bad, 1), 0);
    EXPECT_EQ(MachineMemory().status().message(), std::string("PIPETTE_MEMORY_LIMIT_BYTES = '") +
                                                      bad +
                                                      "': must be a positive number of bytes");
  }
  ASSERT_EQ(unsetenv("PIPETTE_MEMORY_LIMIT_BYTES"), 0);
  Result<AvailableMemory> machine = MachineMemory();
  ASSERT_TRUE(machine.ok());
  EXPECT_GT(machine->bytes, 0);
  EXPECT_EQ(machine->source, "MemAvailable in /proc/meminfo");
}

TEST(TrainMemory, RanksOnThisHostComeFromTheLauncher) {
  ASSERT_EQ(setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1), 0);
  EXPECT_EQ(RanksOnThisHost(8), 2);
  EXPECT_EQ(RanksOnThisHost(1), 1);
  ASSERT_EQ(unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE"), 0);
  ASSERT_EQ(unsetenv("MPI_LOCALNRANKS"), 0);
  EXPECT_EQ(RanksOnThisHost(8), 8);
}

}  // namespace
}  // namespace pipette::cpu
