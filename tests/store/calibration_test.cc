// Calibrations: the alpha-beta fit on synthetic points (exact on a line, relative weighting, the
// clamps), the median, and the store: a round trip with points, the list, NotFound naming
// --calibration, and the migration of a schema-3 database keeping its runs.
#include "pipette/engine/calibration.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "pipette/common/host_machine.h"
#include "pipette/engine/measured_costs.h"
#include "pipette/store/experiment_db.h"

namespace pipette {
namespace {

std::vector<CalibrationPoint> Line(double alpha, double beta, const std::vector<std::int64_t>& x) {
  std::vector<CalibrationPoint> points;
  for (const std::int64_t b : x) {
    points.push_back({"p2p", 2, b, alpha + beta * static_cast<double>(b)});
  }
  return points;
}

TEST(FitAlphaBeta, RecoversALineExactly) {
  // 2 us start-up, 10 GB/s: sizes 0 and 2^k up to 64 MiB, as calibrate measures them.
  std::vector<std::int64_t> sizes = {0};
  for (std::int64_t b = 1; b <= (std::int64_t{1} << 26); b *= 2) sizes.push_back(b);
  const AlphaBeta fit = FitAlphaBeta(Line(2e-6, 1e-10, sizes));
  EXPECT_NEAR(fit.alpha, 2e-6, 2e-6 * 1e-9);
  EXPECT_NEAR(fit.beta, 1e-10, 1e-10 * 1e-9);
  EXPECT_NEAR(fit.Of(1 << 20), 2e-6 + 1e-10 * (1 << 20), 1e-15);
}

TEST(FitAlphaBeta, TwoPointsDetermineTheLine) {
  const AlphaBeta fit = FitAlphaBeta({{"p2p", 2, 0, 3.0}, {"p2p", 2, 100, 8.0}});
  EXPECT_DOUBLE_EQ(fit.alpha, 3.0);
  EXPECT_DOUBLE_EQ(fit.beta, 0.05);
}

// Relative weighting: a 10 % error on the largest message costs as much as a 10 % error on the
// smallest.
TEST(FitAlphaBeta, WeighsRelativeErrorSoSmallMessagesCount) {
  std::vector<CalibrationPoint> points = Line(1.0, 1e-3, {0, 1, 2, 1000000});
  const AlphaBeta exact = FitAlphaBeta(points);
  EXPECT_NEAR(exact.alpha, 1.0, 1e-9);
  // Off a line, by hand: points (0, 1), (10, 2), (20, 4) with weights 1, 1/4, 1/16 give
  // w = 21/16, wx = 15/4, wy = 7/4, wxx = 50, wxy = 10, det = w*wxx - wx^2 = 825/16,
  // alpha = (wxx*wy - wx*wxy) / det = 32/33, beta = (w*wxy - wx*wy) / det = 7/55. (Unweighted
  // least squares would give alpha = 5/6, beta = 3/20.)
  const AlphaBeta fit = FitAlphaBeta({{"p2p", 2, 0, 1}, {"p2p", 2, 10, 2}, {"p2p", 2, 20, 4}});
  EXPECT_NEAR(fit.alpha, 32.0 / 33, 1e-12);
  EXPECT_NEAR(fit.beta, 7.0 / 55, 1e-12);
}

TEST(FitAlphaBeta, ANegativeInterceptIsRefittedThroughTheOrigin) {
  // (10, 1) and (20, 3) lie on t = -1 + 0.2 b: through the origin with weights 1 and 1/9,
  // beta = (10*1*1 + 20*3/9) / (100 + 400/9) = (10 + 60/9) / (1300/9) = 150/1300.
  const AlphaBeta fit = FitAlphaBeta({{"p2p", 2, 10, 1}, {"p2p", 2, 20, 3}});
  EXPECT_EQ(fit.alpha, 0);
  EXPECT_NEAR(fit.beta, 150.0 / 1300, 1e-12);
}

TEST(FitAlphaBeta, ANegativeSlopeOrOneSizeGivesAConstant) {
  // Time falling with size (noise): the weighted mean sum(1/t) / sum(1/t^2) of 2 and 1: 1.5/1.25.
  const AlphaBeta falling = FitAlphaBeta({{"p2p", 2, 0, 2}, {"p2p", 2, 100, 1}});
  EXPECT_DOUBLE_EQ(falling.alpha, 1.5 / 1.25);
  EXPECT_EQ(falling.beta, 0);
  const AlphaBeta one = FitAlphaBeta({{"p2p", 2, 64, 4}});
  EXPECT_DOUBLE_EQ(one.alpha, 4);
  EXPECT_EQ(one.beta, 0);
  EXPECT_EQ(FitAlphaBeta({}).alpha, 0);
  EXPECT_EQ(FitAlphaBeta({{"p2p", 2, 0, 0}}).alpha, 0);  // no positive time: nothing to fit
}

std::string FreshPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "pipette_calibration_" + std::to_string(getpid()) + "_" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

Calibration SomeCalibration() {
  Calibration c;
  c.engine = "cpu";
  c.host = "node7";
  c.created_at = "2026-11-24T21:00:00.000Z";
  c.version = "0.1.0";
  c.ranks = 4;
  c.cores = 8;
  c.p2p = {1.5e-6, 2e-10};
  c.allreduce = {4e-6, 6e-10};
  c.instruction_overhead_s = 3e-7;
  c.gemm_flops = 4e10;
  c.gemm_flops_alone = 5e10;
  c.memory_bytes = 3.2e10;
  c.memory_bandwidth = 9e9;
  c.points = {{"p2p", 2, 0, 1.5e-6}, {"p2p", 2, 1024, 1.7e-6}, {"allreduce", 4, 4, 4.1e-6}};
  c.gemms = {{16, 32, 64, 4, 2.5e-6, GemmPass::kForward},
             {16, 32, 64, 4, 3.5e-6, GemmPass::kWeightGrad}};
  return c;
}

TEST(CalibrationStore, RoundTripsEveryFieldAndPoint) {
  const std::string path = FreshPath("roundtrip");
  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  const Calibration c = SomeCalibration();
  Result<std::int64_t> id = db->RecordCalibration(c);
  ASSERT_TRUE(id.ok()) << id.status().message();
  Result<Calibration> back = db->LoadCalibration(*id);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->id, *id);
  EXPECT_EQ(back->engine, "cpu");
  EXPECT_EQ(back->host, "node7");
  EXPECT_EQ(back->created_at, c.created_at);
  EXPECT_EQ(back->version, "0.1.0");
  EXPECT_EQ(back->ranks, 4);
  EXPECT_EQ(back->cores, 8);
  EXPECT_EQ(back->p2p.alpha, 1.5e-6);
  EXPECT_EQ(back->p2p.beta, 2e-10);
  EXPECT_EQ(back->allreduce.alpha, 4e-6);
  EXPECT_EQ(back->allreduce.beta, 6e-10);
  EXPECT_EQ(back->instruction_overhead_s, 3e-7);
  EXPECT_EQ(back->gemm_flops, 4e10);
  EXPECT_EQ(back->gemm_flops_alone, 5e10);
  EXPECT_EQ(back->memory_bytes, 3.2e10);
  EXPECT_EQ(back->memory_bandwidth, 9e9);
  ASSERT_EQ(back->points.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(back->points[k].what, c.points[k].what);
    EXPECT_EQ(back->points[k].ranks, c.points[k].ranks);
    EXPECT_EQ(back->points[k].bytes, c.points[k].bytes);
    EXPECT_EQ(back->points[k].seconds, c.points[k].seconds);
  }
  EXPECT_EQ(back->gemms, c.gemms);  // the GEMM table, in its order
  EXPECT_EQ(PointsOf(*back, kCalibrationP2p).size(), 2u);
  EXPECT_EQ(PointsOf(*back, kCalibrationAllReduce).size(), 1u);

  // Empty host, version and created_at are this machine's, this pipette's and now.
  Calibration bare = c;
  bare.host = bare.version = bare.created_at = "";
  Result<std::int64_t> second = db->RecordCalibration(bare);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *id + 1);
  Result<std::vector<Calibration>> all = db->ListCalibrations();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].host, HostName());
  EXPECT_FALSE((*all)[1].version.empty());
  EXPECT_EQ((*all)[1].created_at.size(), std::string("2026-11-21T10:04:05.123Z").size());
  EXPECT_TRUE((*all)[0].points.empty());  // the list leaves the points out
}

TEST(CalibrationStore, AnUnknownIdIsNotFoundNamingTheOption) {
  Result<ExperimentDb> db = ExperimentDb::Open(FreshPath("unknown"));
  ASSERT_TRUE(db.ok());
  Result<Calibration> c = db->LoadCalibration(42);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("calibration 42: no such calibration"), std::string::npos)
      << c.status().message();
  // A bad point (negative bytes) is refused and nothing of its calibration stays.
  Calibration bad = SomeCalibration();
  bad.points.push_back({"p2p", 2, -1, 1.0});
  EXPECT_FALSE(db->RecordCalibration(bad).ok());
  Result<std::vector<Calibration>> all = db->ListCalibrations();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST(CalibrationStore, ASchemaThreeDatabaseMigratesKeepingItsRuns) {
  const std::string path = FreshPath("from3");
  {
    Result<ExperimentDb> v3 = ExperimentDb::Open(path, 3);
    ASSERT_TRUE(v3.ok()) << v3.status().message();
    EXPECT_EQ(v3->schema_version(), 3);
    RunRecord run;
    run.engine = "cpu";
    run.config = "{}";
    run.version = "0.0.9";
    run.git_rev = "old";
    run.libraries = "{}";
    ASSERT_TRUE(v3->BeginRun(run).ok());
    // A version-3 database has no calibrations: the list is empty, a lookup NotFound.
    Result<std::vector<Calibration>> none = v3->ListCalibrations();
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
    EXPECT_EQ(v3->LoadCalibration(1).status().code(), StatusCode::kNotFound);
  }
  {  // Read-only opening reads it as it is.
    Result<ExperimentDb> read = ExperimentDb::OpenReadOnly(path);
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(read->schema_version(), 3);
  }
  Result<ExperimentDb> db = ExperimentDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  EXPECT_EQ(db->schema_version(), kSchemaVersion);
  Result<std::vector<RunRecord>> runs = db->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().version, "0.0.9");
  Result<std::int64_t> id = db->RecordCalibration(SomeCalibration());
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(db->LoadCalibration(*id)->points.size(), 3u);
}

}  // namespace
}  // namespace pipette
