#include "pipette/schedule/placement.h"

#include <gtest/gtest.h>

namespace pipette {
namespace {

TEST(Placement, LoopLayoutPutsStageCTimesPPlusROnRankR) {
  Placement loop = Placement::Loop(4, 3);
  ASSERT_EQ(loop.num_stages(), 12);
  EXPECT_EQ(loop.stage_to_rank(), (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(loop.StagesOf(2), (std::vector<int>{2, 6, 10}));
}

TEST(Placement, VLayoutPutsFirstAndLastStageOnRankZero) {
  Placement v = Placement::VShape(4);
  EXPECT_EQ(v.stage_to_rank(), (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(v.StagesOf(0), (std::vector<int>{0, 7}));
  EXPECT_EQ(v.StagesOf(3), (std::vector<int>{3, 4}));
}

TEST(Placement, FromStageRanksRejectsOutOfRangeAndIdleRanks) {
  EXPECT_TRUE(Placement::FromStageRanks({0, 1, 1, 0}, 2).ok());
  Result<Placement> out_of_range = Placement::FromStageRanks({0, 2}, 2);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("stage 1 is placed on rank 2"), std::string::npos);
  Result<Placement> idle = Placement::FromStageRanks({0, 0}, 2);
  ASSERT_FALSE(idle.ok());
  EXPECT_NE(idle.status().message().find("rank 1 holds no stage"), std::string::npos);
}

}  // namespace
}  // namespace pipette
