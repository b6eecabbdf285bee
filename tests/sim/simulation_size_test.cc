// The size of a simulation is estimated before anything is built and a request above the limits
// is refused with the estimate and the limits; Simulate() refuses such a case before it starts
// the engine.
#include "sim/simulation_size.h"

#include <gtest/gtest.h>

#include <string>

#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

TEST(SimulationSize, CountsInstructionsOverReplicasAndStepsAndActorsOverReplicas) {
  const SimulationSize size = EstimateSimulationSize(1000, 4, 3, 2, 50);
  EXPECT_EQ(size.instructions, 1000 * 3 * 2);
  EXPECT_EQ(size.actors, 12);
  EXPECT_EQ(size.routes, 50);
  EXPECT_FALSE(size.lower_bound);
  EXPECT_DOUBLE_EQ(size.bytes, 6000 * 200.0 + 12 * 24 * 1024.0 + 50 * 150.0);  // measured rates
  // Before the schedule: p*v*m chunks of at least two instructions (forward, backward).
  const SimulationSize before = EstimateSimulationSize(16384, 1, 976, 1, 1, 0);
  EXPECT_EQ(before.instructions, 16384LL * 976 * kMinInstructionsPerChunk);
  EXPECT_TRUE(before.lower_bound);
}

TEST(SimulationSize, SaturatesInsteadOfOverflowing) {
  const SimulationSize size = EstimateSimulationSize(1 << 30, 1 << 30, 1 << 30, 1 << 30, 1000, 0);
  EXPECT_GT(size.instructions, kMaxSimulatedInstructions);
  EXPECT_GT(size.actors, 0);
  EXPECT_EQ(CheckSimulationSize(size, "huge").code(), StatusCode::kInvalidArgument);
}

TEST(SimulationSize, RefusesPp16384M976WithTheEstimateAndTheLimits) {
  // This request ran for minutes and took 5.8 GB.
  const Status status =
      CheckSimulationSize(EstimateSimulationSize(16384, 1, 976, 1, 1, 0), "--pp 16384 -m 976");
  ASSERT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().rfind("--pp 16384 -m 976: the simulation would execute at least "
                                   "31981568 instructions on 16384 actors over 0 platform routes",
                                   0),
            0u)
      << status.message();
  EXPECT_NE(status.message().find("(31981568 instructions > 10000000); the limits are 10000000 "
                                  "instructions, 65536 actors, 4000000 routes and 8 GB"),
            std::string::npos)
      << status.message();
}

TEST(SimulationSize, AcceptsWhatFitsAndNamesEachLimit) {
  EXPECT_TRUE(
      CheckSimulationSize(
          EstimateSimulationSize(kMaxSimulatedInstructions, 1024, 1, 1, kMaxPlatformRoutes), "x")
          .ok());
  const Status actors = CheckSimulationSize(EstimateSimulationSize(0, 65537, 1, 1, 0), "x");
  EXPECT_NE(actors.message().find("(65537 actors > 65536)"), std::string::npos) << actors.message();
  const Status routes =
      CheckSimulationSize(EstimateSimulationSize(0, 1, 1, 1, kMaxPlatformRoutes + 1), "x");
  EXPECT_NE(routes.message().find("(4000001 platform routes > 4000000)"), std::string::npos)
      << routes.message();
}

TEST(SimulationSize, SimulateRefusesATooLargeCaseBeforeRunning) {
  Result<Schedule> schedule = MakeSchedule("1f1b", {.p = 4, .m = 8});
  ASSERT_TRUE(schedule.ok());
  Result<Program> program = Lower(*schedule);
  ASSERT_TRUE(program.ok());
  SimulationCase one;
  one.program = &*program;
  one.costs = Costs::Uniform(4, {});
  one.steps = 1000;  // 160 instructions a step: fits
  ASSERT_LE(static_cast<std::int64_t>(program->num_instructions()) * 1000,
            kMaxSimulatedInstructions);
  SimulationCase many = one;
  many.steps = static_cast<int>(kMaxSimulatedInstructions / program->num_instructions()) + 1;
  Result<std::vector<SimulationResult>> refused = Simulate({many});
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("simulation case 0: the simulation would execute "),
            std::string::npos)
      << refused.status().message();
  // Refused before the engine started: this process can still simulate.
  EXPECT_TRUE(Simulate({one}).ok());
}

}  // namespace
}  // namespace pipette
