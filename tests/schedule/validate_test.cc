#include "pipette/schedule/validate.h"

#include <gtest/gtest.h>

#include "pipette/schedule/schedule_csv.h"

namespace pipette {
namespace {

// Parses `csv` and returns Validate's message ("" when valid).
std::string Problem(std::string_view csv) {
  Result<Schedule> s = ParseComputeCsv(csv, "test");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return "parse error";
  Status status = Validate(*s);
  if (!status.ok()) {
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  }
  return status.message();
}

TEST(Validate, AcceptsATwoRankOneFOneB) {
  EXPECT_EQ(Problem("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"), "");
}

TEST(Validate, AcceptsSplitBackward) { EXPECT_EQ(Problem("0F0,0I0,0W0\n1F0,1I0,1W0\n"), ""); }

TEST(Validate, ReportsAMissingForward) {
  // Stage 1 has microbatches 0 and 1 in its backward but only 0 in its forward.
  Result<Schedule> s = ParseComputeCsv("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", "x");
  ASSERT_TRUE(s.ok());
  s->ranks[1].erase(s->ranks[1].begin() + 2);  // drop 1F1
  s->ranks[1].pop_back();                      // and 1B1
  Status status = Validate(*s);
  EXPECT_EQ(status.message(), "rank 1: missing 1F1");
}

TEST(Validate, ReportsAMissingBackwardAndAMissingW) {
  EXPECT_EQ(Problem("0F0,0F1,0B0\n1F0,1B0,1F1,1B1\n"),
            "rank 0: missing the backward of stage 0 microbatch 1 (0B1, or 0I1 and 0W1)");
  EXPECT_EQ(Problem("0F0,0I0\n1F0,1B0\n"), "rank 0: missing 0W0 (its 0I0 is action 1)");
}

TEST(Validate, ReportsDuplicatesAndMixedBackwards) {
  EXPECT_EQ(Problem("0F0,0F0,0B0\n1F0,1B0\n"),
            "rank 0, action 1 (0F0): duplicate, first at action 0");
  EXPECT_EQ(Problem("0F0,0B0,0I0,0W0\n1F0,1B0\n"),
            "rank 0, action 2 (0I0): the stage already has a B for this microbatch (action 1); use "
            "either one B or one I and one W");
  EXPECT_EQ(Problem("0F0,0B0,0W0\n1F0,1B0\n"),
            "rank 0, action 2 (0W0): the stage already ran a full backward B (action 1), which "
            "includes W");
}

TEST(Validate, ReportsPerStageOrder) {
  EXPECT_EQ(Problem("0B0,0F0\n1F0,1B0\n"), "rank 0, action 0 (0B0): comes before its forward");
  EXPECT_EQ(Problem("0F0,0W0,0I0\n1F0,1B0\n"),
            "rank 0, action 1 (0W0): comes before its input-gradient I");
}

TEST(Validate, ReportsAStageOnTheWrongRank) {
  Result<Schedule> s = ParseComputeCsv("0F0,0B0\n1F0,1B0\n", "x");
  ASSERT_TRUE(s.ok());
  s->ranks[1][0] = Action::F(0, 0);
  EXPECT_EQ(Validate(*s).message(), "rank 1, action 0 (0F0): stage 0 is placed on rank 0");
}

TEST(Validate, ReportsADeadlockWithWhatEachRankWaitsFor) {
  // Rank 0 waits for the gradient of microbatch 0 before sending microbatch 1's forward, while
  // rank 1 wants microbatch 1's forward before it sends microbatch 0's gradient.
  EXPECT_EQ(Problem("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n"),
            "deadlock: rank 0 is stuck at action 1 (0B0) waiting for the backward (I or B) of "
            "stage 1 microbatch 0 (rank 1); rank 1 is stuck at action 1 (1F1) waiting for 0F1 "
            "(rank 0)");
}

TEST(Validate, RejectsAnOverlappedCellWhoseSecondHalfIsNotABackward) {
  Result<Schedule> s = ParseComputeCsv("0F0,0I0,0W0,0F1,0I1,0W1\n", "x");
  ASSERT_TRUE(s.ok());
  Action cell = Action::Overlap(Action::F(0, 1), Action::B(0, 0));
  cell.back_kind = ActionKind::kWeightBackward;  // only reachable through the API
  s->ranks[0] = {Action::F(0, 0), Action::I(0, 0), cell, Action::I(0, 1), Action::W(0, 1)};
  EXPECT_EQ(Validate(*s).message(),
            "rank 0, action 2 ((0F1;0W0)): the second half of an overlapped cell must be a B or an "
            "I backward");
}

TEST(Validate, ReportsAnOverlappedCellThatNeedsItself) {
  // The cell's backward needs the forward it is paired with: it can never start.
  EXPECT_NE(Problem("0F0,0B0\n(1F0;1B0)\n")
                .find("rank 1 is stuck at action 0 ((1F0;1B0)) "
                      "waiting for 1F0"),
            std::string::npos);
}

}  // namespace
}  // namespace pipette
