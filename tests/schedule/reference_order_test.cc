// Golden: every generator reproduces the per-rank orders of the published reference
// implementations, exactly. The files in tests/data/reference were produced by running the
// reference code itself (PyTorch, Megatron-LM, JaxPP, the Zero Bubble authors' script, DeepSeek's
// DualPipe) or transcribed from PyTorch's test artifacts; see SOURCES_*.md there.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"
#include "test_util.h"

namespace pipette {
namespace {

struct ReferenceFile {
  std::string path;
  std::string schedule;
  int p, v, m;
};

std::vector<ReferenceFile> ReferenceFiles() {
  const std::regex pattern(R"(^(.+)_p(\d+)_v(\d+)_m(\d+)(_[a-z-]+)?\.csv$)");
  std::vector<ReferenceFile> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(PIPETTE_TEST_DATA_DIR) + "/reference")) {
    const std::string file = entry.path().filename().string();
    std::smatch match;
    if (!std::regex_match(file, match, pattern)) continue;
    files.push_back({entry.path().string(), match[1], std::stoi(match[2]), std::stoi(match[3]),
                     std::stoi(match[4])});
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return files;
}

TEST(ReferenceOrder, EveryGeneratorMatchesEveryReferenceFile) {
  const auto files = ReferenceFiles();
  ASSERT_GE(files.size(), 70u);
  std::set<std::string> covered;
  for (const ReferenceFile& f : files) {
    SCOPED_TRACE(f.path);
    Result<Schedule> reference = LoadComputeCsv(f.path);
    ASSERT_TRUE(reference.ok()) << reference.status().message();
    EXPECT_EQ(reference->p, f.p);
    EXPECT_EQ(reference->v, f.v);
    EXPECT_EQ(reference->m, f.m);
    Schedule generated = testing::MustMake(f.schedule, f.p, f.m, f.v);
    EXPECT_EQ(generated.placement, reference->placement);
    EXPECT_EQ(generated.routes, reference->routes);
    for (int r = 0; r < f.p; ++r) {
      EXPECT_EQ(testing::RankOrder(generated, r), testing::RankOrder(*reference, r))
          << "rank " << r;
    }
    covered.insert(f.schedule);
  }
  std::set<std::string> all;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) all.insert(std::string(g->name()));
  EXPECT_EQ(covered, all) << "a schedule has no reference file";
}

// Published orders spelled out in the sources' own documents, independent of the files above.
TEST(ReferenceOrder, MegatronOneFOneBWarmupIsPMinusOneMinusR) {
  Schedule s = testing::MustMake("1f1b", 4, 8);
  EXPECT_EQ(testing::RankOrder(s, 0),
            "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0F6 0B3 0F7 0B4 0B5 0B6 0B7");
  EXPECT_EQ(testing::RankOrder(s, 3),
            "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5 3F6 3B6 3F7 3B7");
}

TEST(ReferenceOrder, ZeroBubbleH1DefersRWeightGradients) {
  Schedule s = testing::MustMake("zb-h1", 4, 8);
  EXPECT_EQ(testing::RankOrder(s, 0),
            "0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0F6 0I3 0W3 0F7 0I4 0W4 0I5 0W5 0I6 "
            "0W6 0I7 0W7");
  EXPECT_EQ(testing::RankOrder(s, 3),
            "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3F6 3I6 3W3 3F7 3I7 3W4 "
            "3W5 3W6 3W7");
}

TEST(ReferenceOrder, InterleavedMatchesMegatronsDocstringExample) {
  // Megatron-LM cuda_graphs.py, convert_schedule_table_to_order: "PP2 N3M5 with VP2", warmup 5
  // on rank 0, order "1 1 1 2 2 2 -2 1 -2 1 -2 2 -1 2 -1 -1 -2 -2 -1 -1" where k > 0 is a forward
  // of chunk k-1 and -k a backward of chunk v-k. Rank 0 holds chunk 0 = stage 0, chunk 1 = stage 2.
  Schedule s = testing::MustMake("interleaved-1f1b", 2, 5, 2, /*group=*/3);
  std::string chunks;
  for (const Action& a : s.ranks[0]) {
    const int chunk = a.stage / 2 + 1;
    chunks += fmt::format("{}{}", chunks.empty() ? "" : " ",
                          a.kind == ActionKind::kForward ? chunk : -chunk);
  }
  EXPECT_EQ(chunks, "1 1 1 2 2 2 -2 1 -2 1 -2 2 -1 2 -1 -1 -2 -2 -1 -1");
  EXPECT_EQ(testing::RankOrder(s, 0),
            "0F0 0F1 0F2 2F0 2F1 2F2 2B0 0F3 2B1 0F4 2B2 2F3 0B0 2F4 0B1 0B2 2B3 2B4 0B3 0B4");
}

}  // namespace
}  // namespace pipette
