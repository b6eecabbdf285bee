// End to end: inputs whose derived durations are absurd, and requests too large to simulate, are
// refused with exit 2 and a message naming the input, before any run is recorded; a small job on
// a huge cluster runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "pipette_runner.h"

namespace pipette {
namespace {

using testing::CommandResult;
using testing::Pipette;
using testing::ScratchDir;

// The runs recorded in `db` (none when the file does not exist).
std::size_t RunCount(const std::string& db) {
  if (!std::filesystem::exists(ScratchDir() + "/" + db)) return 0;
  CommandResult runs = Pipette("runs --db " + db + " --format json");
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  return nlohmann::json::parse(runs.out).size();
}

void WriteFile(const std::string& name, const std::string& text) {
  std::ofstream(ScratchDir() + "/" + name) << text;
}

TEST(CliBounds, AbsurdEfficiencyOrHardwareIsRefusedAndNothingIsRecorded) {
  std::filesystem::remove(ScratchDir() + "/bounds.db");
  // 1e-320 ended in SimGrid's "deadlock detected" and a segfault; 1e-300 recorded a run with a
  // 10^300 ms step.
  for (const std::string efficiency : {"1e-320", "1e-300", "1e-09"}) {
    CommandResult run = Pipette("simulate --db bounds.db --efficiency " + efficiency);
    EXPECT_EQ(run.exit_code, 2) << efficiency << ": " << run.err;
    EXPECT_EQ(run.err.rfind("pipette simulate: --efficiency = " + efficiency +
                                " (of 989 TFLOP/s "
                                "bf16 on cluster 'dgx-h100'; layer '",
                            0),
              0u)
        << run.err;
    EXPECT_NE(run.err.find("would take "), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(" s; a single duration must lie in [0, 1e+06] s"), std::string::npos)
        << run.err;
    EXPECT_EQ(run.out, "");
  }
  WriteFile("slow_gpu.toml", "base = \"dgx-h100\"\n[gpu.tflops]\nbf16 = 1e-320\n");
  WriteFile("slow_link.toml", "base = \"dgx-h100\"\n[inter_node]\nbandwidth_gb_per_s = 1e-320\n");
  for (const std::string file : {"slow_gpu.toml", "slow_link.toml"}) {
    CommandResult run = Pipette("simulate --db bounds.db --pp 8 -m 8 --nodes 2 --cluster " + file);
    EXPECT_EQ(run.exit_code, 2) << file << ": " << run.err;
    EXPECT_NE(run.err.find("cluster file '" + file + "': "), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(": must be a finite number >= 0.001 ("), std::string::npos) << run.err;
  }
  EXPECT_EQ(RunCount("bounds.db"), 0u);
  // Slow but finite is a run.
  EXPECT_EQ(Pipette("simulate --db bounds.db --efficiency 1e-6").exit_code, 0);
  EXPECT_EQ(RunCount("bounds.db"), 1u);
}

TEST(CliBounds, TooLargeSimulationIsRefusedUpFrontWithTheEstimate) {
  std::filesystem::remove(ScratchDir() + "/large.db");
  // This ran for minutes and took 5.8 GB.
  CommandResult run =
      Pipette("simulate --db large.db --times F=1,I=1,W=1 --ideal-network --pp 16384 -m 976");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(run.err,
            "pipette simulate: --pp 16384 -m 976 --steps 1: the simulation would execute at least "
            "31981568 instructions on 16384 actors over 0 platform routes (about 6.8 GB of "
            "memory and 292 s), more than pipette simulates (31981568 instructions > 10000000); "
            "the limits are 10000000 instructions, 65536 actors, 16000000 routes, 8 GB and 120 s: "
            "use fewer ranks, microbatches, replicas or steps\n");
  // The model path: 2 million microbatches on 4 ranks.
  CommandResult model = Pipette("simulate --db large.db --pp 4 -m 2000000");
  EXPECT_EQ(model.exit_code, 2) << model.err;
  EXPECT_NE(model.err.find("--pp 4 -m 2000000 --steps 1: the simulation would execute at least "
                           "16000000 instructions"),
            std::string::npos)
      << model.err;
  EXPECT_EQ(RunCount("large.db"), 0u);
}

TEST(CliBounds, EveryReplicaOfTooManyIsRefusedBeforeTheScheduleIsBuilt) {
  // 102,400 GPUs: with ring reduction a period of replicas may run for all (sim/README.md, issue
  // 32), so the request is taken to the platform; where every replica must run (--every-replica,
  // a tree) its 102,400 actors are refused at once, before the schedule or the platform exists.
  std::filesystem::remove(ScratchDir() + "/large2.db");
  for (const std::string flag : {"--every-replica", "--grad-reduce tree"}) {
    CommandResult run = Pipette(
        "simulate --db large2.db --model llama2-7b --pp 16 --dp 6400 -m 64 --nodes 12800 " + flag);
    EXPECT_EQ(run.exit_code, 2) << flag << ": " << run.err;
    EXPECT_NE(run.err.find("--pp 16 -m 64 --dp 6400 --steps 1: the simulation would execute at "
                           "least 13107200 instructions on 102400 actors"),
              std::string::npos)
        << flag << ": " << run.err;
    EXPECT_NE(run.err.find("(13107200 instructions > 10000000)"), std::string::npos) << run.err;
  }
  EXPECT_EQ(RunCount("large2.db"), 0u);
}

TEST(CliBounds, SmallJobOnAHugeClusterRuns) {
  // The platform holds only the GPUs the job uses (ClusterPlatform tests count them): 8192 and
  // 131072 nodes build one node for a 2-GPU job.
  for (const std::string nodes : {"8192", "131072"}) {
    CommandResult run = Pipette("simulate --no-db --pp 2 -m 4 --format json --nodes " + nodes);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out)["status"], "ok");
  }
}

}  // namespace
}  // namespace pipette

namespace pipette {
namespace {

// A 4 GB address-space limit, except under AddressSanitizer, which reserves far more at start.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kAddressLimit = "";
#else
constexpr const char* kAddressLimit = "ulimit -v 4000000; ";
#endif

TEST(CliBounds, TrainRefusesAModelTheMachineCannotHoldBeforeAllocating) {
  // gpt3-175b grew to 12 GB before bad_alloc; under a 4 GB address-space limit the old code ended
  // in bad_alloc (exit 1) after allocating, the estimate refuses it before.
  CommandResult run =
      testing::Shell(std::string(kAddressLimit) + "PIPETTE_MEMORY_LIMIT_BYTES=16e9 " +
                     std::string(PIPETTE_BINARY) + " train --model gpt3-175b --no-db");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(run.err.rfind("pipette train: --model gpt3-175b: training needs about 5.79 TB on this "
                          "host (1 rank here; ",
                          0),
            0u)
      << run.err;
  EXPECT_NE(run.err.find("but this machine has 16 GB (PIPETTE_MEMORY_LIMIT_BYTES)"),
            std::string::npos)
      << run.err;
  // Without the override the machine's own memory is the limit, which no machine here reaches.
  CommandResult machine = testing::Shell(std::string(kAddressLimit) + std::string(PIPETTE_BINARY) +
                                         " train --model gpt3-175b --no-db");
  EXPECT_EQ(machine.exit_code, 2) << machine.err;
  EXPECT_NE(machine.err.find("(MemAvailable in /proc/meminfo)"), std::string::npos) << machine.err;
  CommandResult bad = testing::Shell("PIPETTE_MEMORY_LIMIT_BYTES=lots " +
                                     std::string(PIPETTE_BINARY) + " train --no-db");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("PIPETTE_MEMORY_LIMIT_BYTES = 'lots': must be a positive number"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace pipette
