// Every schedule over a grid of p, v and m: each accepted request yields a complete, valid,
// deadlock-free schedule whose lowering evaluates; completeness is recounted here independently of
// validate().
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "pipette/schedule/registry.h"
#include "pipette/schedule/validate.h"
#include "test_util.h"

namespace pipette {
namespace {

// Counts, per (stage, microbatch), the F, I, W and B actions and checks each appears as it must.
void ExpectComplete(const Schedule& s, const std::string& label) {
  std::map<std::tuple<int, int, ActionKind>, int> count;
  for (int r = 0; r < s.p; ++r) {
    for (const Action& a : s.ranks[r]) {
      const Action halves[2] = {a.kind == ActionKind::kOverlapped ? a.forward_half() : a,
                                a.kind == ActionKind::kOverlapped ? a.backward_half() : a};
      for (int h = 0; h < (a.kind == ActionKind::kOverlapped ? 2 : 1); ++h) {
        EXPECT_EQ(s.placement.rank_of(halves[h].stage), r) << label << " " << ToString(a);
        ++count[{halves[h].stage, halves[h].microbatch, halves[h].kind}];
      }
    }
  }
  std::size_t expected_entries = 0;
  for (int i = 0; i < s.m; ++i) {
    for (int stage = s.routes[i].first; stage <= s.routes[i].last; ++stage) {
      const int f = count[{stage, i, ActionKind::kForward}];
      const int b = count[{stage, i, ActionKind::kFullBackward}];
      const int in = count[{stage, i, ActionKind::kInputBackward}];
      const int w = count[{stage, i, ActionKind::kWeightBackward}];
      EXPECT_EQ(f, 1) << label << " stage " << stage << " mb " << i;
      EXPECT_TRUE((b == 1 && in == 0 && w == 0) || (b == 0 && in == 1 && w == 1))
          << label << " stage " << stage << " mb " << i << ": B=" << b << " I=" << in << " W=" << w;
      expected_entries += b == 1 ? 2 : 3;
    }
  }
  std::size_t entries = 0;
  for (const auto& [key, n] : count) entries += n > 0 ? 1 : 0;
  EXPECT_EQ(entries, expected_entries) << label << ": actions outside the microbatch routes";
}

TEST(ScheduleGrid, EveryAcceptedRequestIsCompleteValidAndEvaluates) {
  int accepted = 0;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    int accepted_here = 0;
    for (int p : {1, 2, 3, 4, 5, 6, 8}) {
      for (int v : {1, 2, 3, 4}) {
        for (int m = 1; m <= 4 * p + 2; ++m) {
          ScheduleParams params{p, v, m, 0};
          if (!g->Check(params).ok()) continue;
          const std::string label = fmt::format("{} p={} v={} m={}", g->name(), p, v, m);
          Result<Schedule> s = MakeSchedule(g->name(), params);
          ASSERT_TRUE(s.ok()) << label << ": " << s.status().message();
          Status valid = Validate(*s);
          ASSERT_TRUE(valid.ok()) << label << ": " << valid.message();
          ASSERT_EQ(s->num_stages(), p * v) << label;
          ExpectComplete(*s, label);
          Evaluation e = testing::MustEvaluate(*s, StageCost{1, 2, 1.5});
          EXPECT_GT(e.makespan, 0) << label;
          EXPECT_GE(e.bubble_ratio, 0) << label;
          ++accepted_here;
        }
      }
    }
    EXPECT_GT(accepted_here, 20) << g->name() << " accepts almost nothing in the grid";
    accepted += accepted_here;
  }
  EXPECT_GT(accepted, 1000);
}

}  // namespace
}  // namespace pipette
