#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/schedule/validate.h"
#include "test_util.h"

namespace pipette {
namespace {

using testing::MustMake;

std::string ErrorOf(std::string_view csv) {
  Result<Schedule> s = ParseComputeCsv(csv, "test");
  EXPECT_FALSE(s.ok()) << "accepted:\n" << csv;
  return s.ok() ? "" : s.status().message();
}

TEST(ScheduleCsv, EveryBuiltInScheduleRoundTrips) {
  struct Case {
    const char* name;
    int p, m, v;
  };
  for (const Case& c :
       {Case{"gpipe", 4, 8, 1}, Case{"1f1b", 4, 8, 1}, Case{"eager-1f1b", 3, 5, 1},
        Case{"zb-h1", 4, 8, 1}, Case{"zb-h2", 4, 8, 1}, Case{"interleaved-1f1b", 4, 8, 2},
        Case{"interleaved-1f1b-plus-one", 4, 8, 3}, Case{"kimi-k2", 4, 8, 2},
        Case{"interleaved-gpipe", 2, 4, 3}, Case{"interleaved-zb", 4, 8, 2}, Case{"zbv", 4, 8, 2},
        Case{"dualpipe", 4, 8, 2}, Case{"dualpipe-v", 4, 10, 2}}) {
    Schedule original = MustMake(c.name, c.p, c.m, c.v);
    Result<Schedule> back = ParseComputeCsv(ToComputeCsv(original), original.name);
    ASSERT_TRUE(back.ok()) << c.name << ": " << back.status().message();
    EXPECT_EQ(back->p, original.p) << c.name;
    EXPECT_EQ(back->v, original.v) << c.name;
    EXPECT_EQ(back->m, original.m) << c.name;
    EXPECT_EQ(back->placement, original.placement) << c.name;
    EXPECT_EQ(back->routes, original.routes) << c.name;
    EXPECT_EQ(back->ranks, original.ranks) << c.name;
    EXPECT_EQ(ToComputeCsv(*back), ToComputeCsv(original)) << c.name;
    for (const auto& actions : original.ranks) {  // PyTorch's spelling of an overlapped cell
      for (const Action& a : actions) {
        if (a.kind != ActionKind::kOverlapped) continue;
        EXPECT_NE(ToComputeCsv(original).find(ToString(a) + "OVERLAP_F_B"), std::string::npos);
      }
    }
    EXPECT_TRUE(Validate(*back).ok()) << c.name;
  }
}

TEST(ScheduleCsv, IgnoresEmptyCellsNoneCarriageReturnsAndAByteOrderMark) {
  Result<Schedule> s = ParseComputeCsv(
      "\xEF\xBB\xBF"
      "0F0,,0B0, None \r\n,1F0, ,1B0\r\n\r\n",
      "x");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->p, 2);
  EXPECT_EQ(s->v, 1);
  EXPECT_EQ(s->m, 1);
  EXPECT_EQ(s->ranks[0], (std::vector<Action>{Action::F(0, 0), Action::B(0, 0)}));
  EXPECT_EQ(s->ranks[1], (std::vector<Action>{Action::F(1, 0), Action::B(1, 0)}));
  EXPECT_TRUE(Validate(*s).ok());
}

TEST(ScheduleCsv, InfersVLayoutAndDualPipeRoutes) {
  Schedule dualpipe = MustMake("dualpipe", 4, 8);
  Result<Schedule> back = ParseComputeCsv(ToComputeCsv(dualpipe), "x");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->placement.stage_to_rank(), (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(back->routes[0], (StageRange{0, 3}));
  EXPECT_EQ(back->routes[3], (StageRange{0, 3}));
  EXPECT_EQ(back->routes[4], (StageRange{4, 7}));
  EXPECT_EQ(back->routes[7], (StageRange{4, 7}));
}

TEST(ScheduleCsv, ErrorsNameTheLineCellAndRule) {
  EXPECT_EQ(ErrorOf(""), "schedule CSV is empty: need one line per rank");
  EXPECT_NE(ErrorOf("0F0,0Q0\n").find("line 1, cell 2: action '0Q0'"), std::string::npos);
  EXPECT_NE(ErrorOf("0F0,0SEND_F0\n").find("communication action"), std::string::npos);
  EXPECT_NE(ErrorOf("0F0,0B0\n0F1,0B1\n").find("stage 0 on rank 1"), std::string::npos);
  EXPECT_NE(ErrorOf("0F0,0B0\n2F0,2B0\n").find("stage 1 has no action"), std::string::npos);
  EXPECT_NE(ErrorOf("0F0,0B0,2F0,2B0\n1F0,1B0\n").find("S = 3 stages on p = 2 ranks"),
            std::string::npos);
  EXPECT_NE(ErrorOf("0F0,0F1,0B0,0B1\n1F0,1B0\n").find("microbatch 1 has forwards on stages 0..0"),
            std::string::npos);
  EXPECT_NE(ErrorOf("0F1,0B1\n1F1,1B1\n").find("microbatch 0 has no forward"), std::string::npos);
  EXPECT_NE(ErrorOf(",,\n0F0,0B0,1F0,1B0\n").find("line 1 holds no action"), std::string::npos);
  EXPECT_NE(ErrorOf("0F0,0B0\n\n1F0,1B0\n").find("line 2 holds no action"), std::string::npos);
  // Huge numbers are rejected before any table is sized by them.
  EXPECT_NE(ErrorOf("0F0,0B0,0F999999999\n").find("microbatch 999999999 in a file of 3 actions"),
            std::string::npos);
  EXPECT_NE(ErrorOf("0F0,2000000000F0\n").find("stage 2000000000 in a file of 2 actions"),
            std::string::npos);
}

TEST(ScheduleCsv, LoadReportsAMissingFile) {
  Result<Schedule> s = LoadComputeCsv("/nonexistent/schedule.csv");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/schedule.csv"), std::string::npos);
}

TEST(ScheduleCsv, MakeScheduleLoadsAFileAndChecksAgreement) {
  const std::string path =
      ::testing::TempDir() + std::to_string(getpid()) + "_pipette_csv_test.csv";
  {
    std::ofstream out(path);
    out << ToComputeCsv(MustMake("zbv", 2, 4));
  }
  Result<Schedule> s = MakeSchedule("csv:" + path, ScheduleParams{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->name, "csv:" + path);
  EXPECT_EQ(s->p, 2);
  EXPECT_EQ(s->v, 2);
  EXPECT_EQ(s->m, 4);
  EXPECT_TRUE(MakeSchedule("csv:" + path, ScheduleParams{2, 2, 4, 0}).ok());
  Result<Schedule> wrong_m = MakeSchedule("csv:" + path, ScheduleParams{0, 0, 5, 0});
  ASSERT_FALSE(wrong_m.ok());
  EXPECT_NE(wrong_m.status().message().find("-m = 5 disagrees with"), std::string::npos);
  EXPECT_NE(wrong_m.status().message().find("which has m = 4"), std::string::npos);
  Result<Schedule> wrong_p = MakeSchedule("csv:" + path, ScheduleParams{3, 0, 0, 0});
  ASSERT_FALSE(wrong_p.ok());
  EXPECT_NE(wrong_p.status().message().find("which has p = 2"), std::string::npos);
  std::remove(path.c_str());
}

TEST(ScheduleCsv, MakeScheduleRejectsAnInvalidCustomSchedule) {
  const std::string path =
      ::testing::TempDir() + std::to_string(getpid()) + "_pipette_csv_deadlock.csv";
  {
    std::ofstream out(path);
    out << "0F0,0B0\n1B0,1F0\n";  // rank 1 runs the backward before its forward
  }
  Result<Schedule> s = MakeSchedule("csv:" + path, ScheduleParams{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("rank 1, action 0 (1B0): comes before its forward"),
            std::string::npos)
      << s.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pipette
