#include "pipette/schedule/registry.h"

#include <gtest/gtest.h>

#include <set>

namespace pipette {
namespace {

// Returns MakeSchedule's error message, expecting InvalidArgument.
std::string Rejection(const std::string& name, int p, int m, int v = 0, int group = 0) {
  Result<Schedule> s = MakeSchedule(name, ScheduleParams{p, v, m, group});
  EXPECT_FALSE(s.ok()) << name << " p=" << p << " m=" << m << " v=" << v << " accepted";
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().message();
  return s.status().message();
}

TEST(Registry, ListsFifteenSchedulesWithUniqueNames) {
  std::set<std::string_view> names;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    names.insert(g->name());
    EXPECT_EQ(FindScheduleGenerator(g->name()), g);
    EXPECT_FALSE(g->summary().empty());
    EXPECT_FALSE(g->constraints().empty());
  }
  EXPECT_EQ(names, (std::set<std::string_view>{
                       "gpipe", "1f1b", "eager-1f1b", "zb-h1", "zb-h2", "interleaved-1f1b",
                       "interleaved-1f1b-plus-one", "kimi-k2", "interleaved-gpipe",
                       "interleaved-zb", "zbv", "dualpipe", "dualpipe-v", "v-half", "v-min"}));
}

TEST(Registry, UnknownNameIsNotFound) {
  Result<Schedule> s = MakeSchedule("2f2b", ScheduleParams{4, 0, 8, 0});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("unknown schedule '2f2b'"), std::string::npos);
}

TEST(Registry, DefaultVComesFromTheSchedule) {
  EXPECT_EQ(MakeSchedule("1f1b", ScheduleParams{4, 0, 8, 0})->v, 1);
  EXPECT_EQ(MakeSchedule("interleaved-1f1b", ScheduleParams{4, 0, 8, 0})->v, 2);
  EXPECT_EQ(MakeSchedule("zbv", ScheduleParams{4, 0, 8, 0})->num_stages(), 8);
}

TEST(Registry, CommonRulesNameTheKey) {
  EXPECT_EQ(Rejection("1f1b", 0, 8), "-p = 0: need at least 1 pipeline rank");
  EXPECT_EQ(Rejection("1f1b", 4, 0), "-m = 0: need at least 1 microbatch");
  EXPECT_EQ(Rejection("1f1b", 4, 8, -1), "-v = -1: need at least 1 stage per rank");
  EXPECT_NE(Rejection("1f1b", 4, 8, 1, 4).find("--group-size = 4: schedule '1f1b' has no"),
            std::string::npos);
  EXPECT_NE(Rejection("gpipe", 10000, 10000, 1).find("more than the limit"), std::string::npos);
  // p*v*m beyond 2^63 must not wrap around the limit.
  EXPECT_NE(Rejection("interleaved-gpipe", 16000, 4194304, 2097152).find("more than the limit"),
            std::string::npos);
  EXPECT_EQ(Rejection("1f1b", 16385, 1), "-p = 16385: more than the limit of 16384 pipeline ranks");
}

TEST(Registry, ScheduleConstraintsNameTheRule) {
  EXPECT_EQ(Rejection("gpipe", 4, 8, 2),
            "schedule 'gpipe': v = 2: this schedule has exactly 1 stage(s) per rank (one stage per "
            "rank; see interleaved-gpipe for v > 1)");
  EXPECT_NE(Rejection("zbv", 4, 8, 3).find("v = 3: this schedule has exactly 2"),
            std::string::npos);
  EXPECT_NE(Rejection("zb-h1", 4, 3).find("m = 3: this schedule needs m >= p = 4"),
            std::string::npos);
  EXPECT_NE(Rejection("zb-h2", 4, 7).find("m = 7: this schedule needs m >= 2p = 8"),
            std::string::npos);
  EXPECT_NE(Rejection("dualpipe", 3, 6).find("p = 3: DualPipe needs an even number of ranks"),
            std::string::npos);
  EXPECT_NE(Rejection("dualpipe", 4, 9).find("m = 9: DualPipe needs an even m"), std::string::npos);
  EXPECT_NE(Rejection("dualpipe", 4, 6).find("m = 6: this schedule needs m >= 2p = 8"),
            std::string::npos);
  EXPECT_NE(Rejection("dualpipe-v", 4, 7).find("m >= 2p = 8"), std::string::npos);
  // interleaved-1f1b follows PyTorch without --group-size (it runs p = 4 with m = 3 and m = 10);
  // Megatron's rules apply with --group-size and to the +1 variants.
  EXPECT_NE(Rejection("interleaved-1f1b", 4, 3, 2, 4)
                .find("m = 3: Megatron-LM's interleaved schedule (v > 1) needs m >= p = 4"),
            std::string::npos);
  EXPECT_NE(Rejection("kimi-k2", 4, 3).find("m = 3: Megatron-LM's interleaved schedule"),
            std::string::npos);
  EXPECT_NE(Rejection("interleaved-1f1b", 4, 10, 2, 4).find("the last group has 2 < p = 4"),
            std::string::npos);
  EXPECT_NE(Rejection("interleaved-1f1b", 4, 9)
                .find("m = 9: PyTorch's ScheduleInterleaved1F1B needs m to be a multiple of its "
                      "rounds max(1, floor(m/p)) = 2"),
            std::string::npos);
  EXPECT_NE(Rejection("interleaved-1f1b", 4, 8, 2, 3)
                .find("--group-size = 3: microbatches per "
                      "chunk group must lie in [p, m] = [4, 8]"),
            std::string::npos);
  EXPECT_NE(Rejection("kimi-k2", 4, 10).find("last group"), std::string::npos);
  EXPECT_NE(Rejection("interleaved-zb", 4, 9)
                .find("m = 9: must be divisible by the number of "
                      "rounds max(1, floor(m/p)) = 2"),
            std::string::npos);
}

TEST(Registry, GroupSizeLiftsMegatronsLastGroupRule) {
  // m = 10 on p = 4 is rejected with G = 4 but fine with G = 5 (what PyTorch picks: 10 / 2 rounds).
  Result<Schedule> s = MakeSchedule("interleaved-1f1b", ScheduleParams{4, 2, 10, 5});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->m, 10);
  // A short last group is accepted once it holds at least p microbatches: 16 = 6 + 6 + 4.
  EXPECT_TRUE(MakeSchedule("interleaved-1f1b", ScheduleParams{4, 2, 16, 6}).ok());
}

}  // namespace
}  // namespace pipette
