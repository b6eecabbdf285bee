// Golden: a drop-in for PyTorch users. Over p = 1..8, v = 1..4 and m = 1..3p+1, every size that
// PyTorch's schedule classes build is accepted by the pipette schedule of the same order, and its
// per-rank compute-only orders equal PyTorch's. The files tests/data/reference/pytorch-grid_*.txt
// come from tests/data/reference/pytorch_grid.py, a transcription of PyTorch's
// torch/distributed/pipelining/schedules.py (see SOURCES_pytorch_grid.md): one line per grid point,
// "p v m ok <FNV-1a 64 of each rank's order>" (plus the orders themselves for p <= 3) or
// "p v m raises <reason>". Where PyTorch raises, the test pins what pipette does instead.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "pipette/schedule/registry.h"
#include "test_util.h"

namespace pipette {
namespace {

struct GridPoint {
  int p = 0, v = 0, m = 0;
  bool ok = false;
  std::string reason;               // when PyTorch raises
  std::vector<std::string> hashes;  // when ok: one per rank
  std::vector<std::string> orders;  // when ok and p <= 3: one per rank
};

std::string Fnv1a64(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::vector<std::string> Split(const std::string& text, const std::string& separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t at; (at = text.find(separator, start)) != std::string::npos;) {
    parts.push_back(text.substr(start, at - start));
    start = at + separator.size();
  }
  parts.push_back(text.substr(start));
  return parts;
}

std::vector<GridPoint> LoadGrid(const std::string& schedule) {
  const std::string path =
      fmt::format("{}/reference/pytorch-grid_{}.txt", PIPETTE_TEST_DATA_DIR, schedule);
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<GridPoint> grid;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> halves = Split(line, " | ");
    std::istringstream fields(halves[0]);
    GridPoint point;
    std::string status;
    fields >> point.p >> point.v >> point.m >> status;
    point.ok = status == "ok";
    if (point.ok) {
      for (std::string h; fields >> h;) point.hashes.push_back(h);
      if (halves.size() == 2) point.orders = Split(halves[1], " / ");
    } else {
      fields >> point.reason;
    }
    grid.push_back(point);
  }
  return grid;
}

// Where PyTorch raises, pipette accepts exactly these extra sizes (orders that run and that its
// published source defines): GPipe and 1F1B with m < p (Megatron-LM, GPipe and JaxPP run them),
// and interleaved-1f1b with v = 1 for any m (one chunk: the group size is irrelevant).
bool PipetteAcceptsWherePytorchRaises(const std::string& schedule, const GridPoint& point) {
  if (schedule == "gpipe" || schedule == "1f1b") return point.v == 1;
  if (schedule == "interleaved-1f1b") return point.v == 1;
  return false;
}

struct Tally {
  int pytorch_ok = 0, pytorch_raises = 0, extra_accepted = 0;
};

void CheckSchedule(const std::string& schedule, Tally& tally) {
  const std::vector<GridPoint> grid = LoadGrid(schedule);
  for (const GridPoint& point : grid) {
    const std::string label = fmt::format("{} p={} v={} m={}", schedule, point.p, point.v, point.m);
    SCOPED_TRACE(label);
    Result<Schedule> made = MakeSchedule(schedule, ScheduleParams{point.p, point.v, point.m, 0});
    if (!point.ok) {
      ++tally.pytorch_raises;
      const bool expected = PipetteAcceptsWherePytorchRaises(schedule, point);
      EXPECT_EQ(made.ok(), expected) << "PyTorch raises (" << point.reason << ")";
      if (made.ok()) ++tally.extra_accepted;
      if (!made.ok()) {
        EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
        const std::string message = made.status().message();
        EXPECT_TRUE(message.find("m = ") != std::string::npos ||
                    message.find("v = ") != std::string::npos)
            << message;
      }
      continue;
    }
    ++tally.pytorch_ok;
    EXPECT_TRUE(made.ok()) << "PyTorch runs it, pipette refuses: " << made.status().message();
    EXPECT_EQ(static_cast<int>(point.hashes.size()), point.p);
    if (!made.ok() || static_cast<int>(point.hashes.size()) != point.p) continue;
    for (int r = 0; r < point.p; ++r) {
      const std::string order = testing::RankOrder(*made, r);
      if (!point.orders.empty()) {
        EXPECT_EQ(order, point.orders[r]) << "rank " << r;
      }
      EXPECT_EQ(Fnv1a64(order), point.hashes[r]) << "rank " << r << ": " << order;
    }
  }
  EXPECT_EQ(static_cast<int>(grid.size()), 464) << schedule;  // sum over p = 1..8 of 4(3p+1)
}

TEST(PytorchGrid, HashIsFnv1a64) {
  // Reference values of FNV-1a 64 (Fowler, Noll, Vo): "" and "a".
  EXPECT_EQ(Fnv1a64(""), "cbf29ce484222325");
  EXPECT_EQ(Fnv1a64("a"), "af63dc4c8601ec8c");
}

TEST(PytorchGrid, EveryPytorchSizeIsAcceptedWithPytorchsOrder) {
  // Counts from the generator (pytorch_grid.py prints them): PyTorch accepts / raises.
  const std::map<std::string, std::pair<int, int>> expected = {{"gpipe", {88, 376}},
                                                               {"1f1b", {88, 376}},
                                                               {"interleaved-1f1b", {372, 92}},
                                                               {"interleaved-gpipe", {464, 0}},
                                                               {"interleaved-zb", {372, 92}},
                                                               {"zbv", {116, 348}},
                                                               {"dualpipe-v", {52, 412}}};
  for (const auto& [schedule, counts] : expected) {
    Tally tally;
    CheckSchedule(schedule, tally);
    EXPECT_EQ(tally.pytorch_ok, counts.first) << schedule;
    EXPECT_EQ(tally.pytorch_raises, counts.second) << schedule;
  }
}

TEST(PytorchGrid, PytorchDocstringSizesRunInterleaved) {
  // ScheduleInterleaved1F1B's docstring: p = 4, m = 10 -> 2 rounds of 5; p = 4, m = 3 -> 1 round.
  // Rank 0, v = 2, m = 10: warmup (v-1)*5 + 2*3 = 11 forwards, chunk 0 = stage 0 and chunk 1 =
  // stage 4 alternating in groups of 5; the first steady pair is 0F6 (step 11: chunk (11/5) % 2 =
  // 0) and 4B0 (chunk v-1 first).
  Schedule s = testing::MustMake("interleaved-1f1b", 4, 10, 2);
  EXPECT_EQ(testing::RankOrder(s, 0).substr(0, 51),
            "0F0 0F1 0F2 0F3 0F4 4F0 4F1 4F2 4F3 4F4 0F5 0F6 4B0");
  Schedule small = testing::MustMake("interleaved-1f1b", 4, 3, 2);
  // Rank 3 (the last) of one round of 3: warmup (v-1)*3 = 3, then F/B pairs.
  EXPECT_EQ(testing::RankOrder(small, 3), "3F0 3F1 3F2 7F0 7B0 7F1 7B1 7F2 7B2 3B0 3B1 3B2");
}

TEST(PytorchGrid, PytorchSizesMeetTheInterleavedClosedForm) {
  // G = m / rounds >= p divides m for every PyTorch size with m >= p, so the makespan is
  // (m*v + p-1)(f+b): with f = 1, b = 2 at p = 4, v = 2: 39, 45, 51, 69 for m = 5, 6, 7, 10.
  for (int m : {5, 6, 7, 10}) {
    const Evaluation e =
        testing::MustEvaluate(testing::MustMake("interleaved-1f1b", 4, m, 2), StageCost{1, 1, 1});
    EXPECT_DOUBLE_EQ(e.makespan, (m * 2 + 3) * 3.0) << "m = " << m;
  }
  // m < p: one round of G = m = 3, too few microbatches to keep the 8 stages busy. By hand: the
  // backward of microbatch 2 leaves stage 7 at 16 and then crosses stages 6..0 back to back (6B2
  // at 16-18, ..., 0B2 at 28-30), so 30 rather than (3*2 + 3) * 3 = 27.
  EXPECT_DOUBLE_EQ(
      testing::MustEvaluate(testing::MustMake("interleaved-1f1b", 4, 3, 2), StageCost{1, 1, 1})
          .makespan,
      30.0);
}

TEST(PytorchGrid, MegatronOrderStaysAvailableWithGroupSize) {
  // p = 4, m = 10, v = 2: PyTorch's G = 5 by default; Megatron-LM refuses its default G = 4 (last
  // group of 2 < p) and says which flavour runs it.
  Result<Schedule> megatron = MakeSchedule("interleaved-1f1b", ScheduleParams{4, 2, 10, 4});
  ASSERT_FALSE(megatron.ok());
  EXPECT_NE(megatron.status().message().find("without --group-size, PyTorch's order (G = m / "
                                             "max(1, floor(m/p)) = 5) accepts it"),
            std::string::npos)
      << megatron.status().message();
  // --group-size 5 is Megatron's order for G = 5, which is PyTorch's default order here.
  Schedule g5 = testing::MustMake("interleaved-1f1b", 4, 10, 2, /*group=*/5);
  Schedule pytorch = testing::MustMake("interleaved-1f1b", 4, 10, 2);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(testing::RankOrder(g5, r), testing::RankOrder(pytorch, r));
  // p = 4, m = 12: PyTorch's G = 4 = Megatron's default; G = 6 gives a different (Megatron) order.
  Schedule g6 = testing::MustMake("interleaved-1f1b", 4, 12, 2, /*group=*/6);
  Schedule g4 = testing::MustMake("interleaved-1f1b", 4, 12, 2, /*group=*/4);
  Schedule default12 = testing::MustMake("interleaved-1f1b", 4, 12, 2);
  EXPECT_EQ(testing::RankOrder(g4, 0), testing::RankOrder(default12, 0));
  EXPECT_NE(testing::RankOrder(g6, 0), testing::RankOrder(default12, 0));
  // Megatron refuses m < p; PyTorch (the default) runs it.
  Result<Schedule> small = MakeSchedule("interleaved-1f1b", ScheduleParams{4, 2, 3, 4});
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("m = 3"), std::string::npos);
  EXPECT_NE(small.status().message().find("without --group-size"), std::string::npos);
}

TEST(PytorchGrid, PytorchRefusalNamesTheMegatronAlternative) {
  // p = 4, m = 9: rounds = 2 does not divide 9, so PyTorch raises; Megatron-LM runs it with
  // G = 5 (9 % 5 = 4 >= p) or G = 9; 6, 7 and 8 leave a last group of 3, 2, 1 < p.
  Result<Schedule> s = MakeSchedule("interleaved-1f1b", ScheduleParams{4, 2, 9, 0});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("m = 9"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("rounds max(1, floor(m/p)) = 2"), std::string::npos);
  EXPECT_NE(s.status().message().find("--group-size 5"), std::string::npos);
  testing::MustMake("interleaved-1f1b", 4, 9, 2, /*group=*/5);
  testing::MustMake("interleaved-1f1b", 4, 9, 2, /*group=*/9);
  for (int g : {6, 7, 8}) {
    EXPECT_FALSE(MakeSchedule("interleaved-1f1b", ScheduleParams{4, 2, 9, g}).ok()) << g;
  }
}

TEST(PytorchGrid, MegatronReferenceFilesComeFromTheMegatronFlavour) {
  // The interleaved-1f1b golden files were made by running Megatron-LM (G = p): --group-size p
  // reproduces them, as the default (PyTorch's G, equal to p there) does in reference_order_test.
  for (const auto& [p, v, m] : std::vector<std::tuple<int, int, int>>{
           {2, 2, 4}, {3, 2, 6}, {4, 2, 4}, {4, 2, 8}, {4, 2, 12}, {4, 3, 8}, {8, 2, 16}}) {
    const std::string path = fmt::format("{}/reference/interleaved-1f1b_p{}_v{}_m{}.csv",
                                         PIPETTE_TEST_DATA_DIR, p, v, m);
    Result<Schedule> reference = MakeSchedule("csv:" + path, ScheduleParams{});
    ASSERT_TRUE(reference.ok()) << reference.status().message();
    Schedule megatron = testing::MustMake("interleaved-1f1b", p, m, v, /*group=*/p);
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(testing::RankOrder(megatron, r), testing::RankOrder(*reference, r)) << path;
    }
  }
}

}  // namespace
}  // namespace pipette
