// `pipette calibrate` end to end (label mpi): one command from a shell launches mpirun itself,
// measures, records a sane calibration (sizes as asked, positive times, the largest message slower
// than the empty one, alpha below 1 ms), writes a cluster file that the cluster parser reads back
// with the calibration's figures, and lists it; bad options are refused with exit 2 before
// anything is written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "pipette/cluster/cluster_toml.h"
#include "pipette/common/host_machine.h"
#include "pipette/store/experiment_db.h"
#include "pipette_runner.h"

namespace pipette {
namespace {

using testing::CommandResult;
using testing::Pipette;

std::string FreshDb(const std::string& name) {
  const std::string path = testing::ScratchDir() + "/" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

nlohmann::json LastJsonLine(const std::string& out) {
  const std::size_t start = out.rfind("\n{");
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

void ExpectSane(const std::vector<CalibrationPoint>& points, std::int64_t first) {
  ASSERT_FALSE(points.empty());
  // The sizes asked for, in order: first, then doubling from 4 bytes up to --max-bytes.
  std::int64_t expected = first;
  for (const CalibrationPoint& p : points) {
    EXPECT_EQ(p.bytes, expected);
    EXPECT_EQ(p.ranks, 2);
    EXPECT_GT(p.seconds, 0) << p.what << " " << p.bytes;
    EXPECT_LT(p.seconds, 0.1) << p.what << " " << p.bytes;
    expected = expected == 0 ? 4 : expected * 2;
  }
  EXPECT_EQ(points.back().bytes, 65536);
  EXPECT_GT(points.back().seconds, points.front().seconds);  // 64 KiB take longer than 0 or 4 B
}

TEST(CalibrateCli, MeasuresRecordsAndWritesAClusterFile) {
  const std::string db = FreshDb("calibrate");
  const std::string toml = testing::ScratchDir() + "/host.toml";
  std::filesystem::remove(toml);
  const CommandResult run =
      Pipette("calibrate --ranks 2 --repeats 3 --max-bytes 65536 --gemm-max 64 --db " + db +
              " --cluster-out " + toml + " --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const nlohmann::json json = LastJsonLine(run.out);
  const std::int64_t id = json["calibration_id"].get<std::int64_t>();

  Result<ExperimentDb> store = ExperimentDb::OpenReadOnly(db);
  ASSERT_TRUE(store.ok()) << store.status().message();
  Result<Calibration> c = store->LoadCalibration(id);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->engine, "cpu");
  EXPECT_EQ(c->ranks, 2);
  EXPECT_GE(c->cores, 1);
  EXPECT_EQ(c->host, HostName());
  ExpectSane(PointsOf(*c, kCalibrationP2p), 0);
  ExpectSane(PointsOf(*c, kCalibrationAllReduce), 4);
  EXPECT_EQ(c->points.size(), 16u + 15u);
  for (const AlphaBeta& fit : {c->p2p, c->allreduce}) {
    EXPECT_GE(fit.alpha, 0);
    EXPECT_LT(fit.alpha, 1e-3);
    EXPECT_GT(fit.beta, 0);
  }
  EXPECT_GT(c->instruction_overhead_s, 0);
  EXPECT_LT(c->instruction_overhead_s, 1e-3);
  EXPECT_GT(c->gemm_flops, 1e8);  // any core of this century runs sgemm faster than 0.1 GFLOP/s
  EXPECT_GT(c->gemm_flops_alone, 1e8);
  EXPECT_GT(c->memory_bytes, 0);
  EXPECT_GT(c->memory_bandwidth, 0);
  // The GEMM table: sizes 16, 32, 64 in m, n and k, each pass, two ranks at once; a full grid.
  ASSERT_EQ(c->gemms.size(), 3u * 27u);
  for (const GemmTiming& g : c->gemms) {
    EXPECT_EQ(g.ranks, 2);
    EXPECT_GT(g.seconds, 0);
    EXPECT_LT(g.seconds, 0.1);  // a 64^3 sgemm (0.5 MFLOP) takes microseconds
  }
  EXPECT_EQ(c->gemms.front().pass, GemmPass::kForward);
  EXPECT_EQ(c->gemms.back().pass, GemmPass::kWeightGrad);
  EXPECT_TRUE(GemmTable::Of(c->gemms).ok());
  // The JSON line is the stored calibration.
  EXPECT_EQ(json["p2p"]["alpha_s"].get<double>(), c->p2p.alpha);
  EXPECT_EQ(json["points"].size(), c->points.size());
  EXPECT_EQ(json["gemms"].size(), c->gemms.size());

  // The cluster file: one node of `cores` "GPUs" with the calibration's figures.
  Result<ClusterSpec> cluster = LoadClusterToml(toml);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_EQ(cluster->nodes, 1);
  EXPECT_EQ(cluster->gpus_per_node, c->cores);
  EXPECT_NEAR(cluster->gpu.peak_flops.at(DType::kFP32), c->gemm_flops, c->gemm_flops * 1e-5);
  EXPECT_NEAR(cluster->intra_node.bandwidth, 1 / c->p2p.beta, 1e-5 / c->p2p.beta);
  EXPECT_NEAR(cluster->intra_node.latency, c->p2p.alpha, c->p2p.alpha * 1e-5 + 1e-12);
  EXPECT_NEAR(static_cast<double>(cluster->gpu.memory_bytes), c->memory_bytes / c->cores,
              c->memory_bytes * 1e-5);

  // Listed by both commands.
  const CommandResult list = Pipette("calibrations --db " + db);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(HostName()), std::string::npos) << list.out;
  const CommandResult listed = Pipette("calibrate --list --format json --db " + db);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(nlohmann::json::parse(listed.out).size(), 1u);
  const CommandResult missing = Pipette("calibrations --db " + db + " --id 99");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--id = 99: calibration 99: no such calibration"), std::string::npos)
      << missing.err;
}

TEST(CalibrateCli, BadOptionsAreRefusedWithExitTwoBeforeAnythingIsWritten) {
  const std::string db = FreshDb("refused");
  const std::pair<std::string, std::string> cases[] = {
      {"--ranks 1", "--ranks = 1: needs at least 2 processes"},
      {"--ranks 100000",
       "--ranks = 100000: needs at least 2 processes (the p2p ping-pong runs "
       "between ranks 0 and 1) and at most 4096"},
      {"--repeats 0", "--repeats = 0: must be in [1, 10000]"},
      {"--max-bytes 2", "--max-bytes = 2: must be in [4, 1073741824]"},
      {"--max-bytes 4294967296", "--max-bytes = 4294967296"},
      {"--engine cuda", "--engine"},
      {"--cluster-out host.txt", "--cluster-out = 'host.txt': a cluster file's name ends in .toml"},
      {"--format xml", "--format"},
      {"--cores 0", "--cores = 0: must be at least 1"},
      {"--ranks two", "--ranks"},
      {"--cluster-out no/such/dir/host.toml",
       "--cluster-out = 'no/such/dir/host.toml': the directory 'no/such/dir' does not exist"},
      // About 7.7 h measured; refused in milliseconds with the estimate.
      {"--repeats 10000 --max-bytes 1073741824",
       "--repeats = 10000 --max-bytes = 1073741824 --gemm-max = 2048: would take about 8.0 h"},
      {"--gemm-max 100", "--gemm-max = 100: the GEMM table's largest size is a power of two"},
      {"--gemm-max 8192", "--gemm-max = 8192"},
      {"--repeats 700 --max-bytes 1073741824", "more than the limit of 30 min"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult run = Pipette("calibrate " + args + " --db " + db);
    EXPECT_EQ(run.exit_code, 2) << args << ": " << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << args << ": " << run.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db));
  const CommandResult empty_db = Pipette("calibrate --db ''");
  EXPECT_EQ(empty_db.exit_code, 2) << empty_db.err;
}

// Started by hand under mpirun with another process count than --ranks: every rank refuses.
TEST(CalibrateCli, AnMpirunOfTheWrongSizeIsRefused) {
  const std::string db = FreshDb("wrong_size");
  const CommandResult run =
      testing::Shell(std::string(PIPETTE_MPIEXEC) + " --oversubscribe" +
                     (geteuid() == 0 ? " --allow-run-as-root" : "") + " -np 3 " + PIPETTE_BINARY +
                     " calibrate --ranks 2 --repeats 1 --max-bytes 4 --db " + db);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("mpirun started 3 processes but calibrate needs 2"), std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace pipette
