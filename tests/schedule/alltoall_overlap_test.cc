// The (F;B) overlap model (costs.h): an MoE stage's F, I and B run their all-to-all after their
// compute; an overlapped cell runs both halves' compute while both halves' all-to-all are in
// flight, max(compute, all-to-all), instead of the serial sum. A dense model gains nothing, 1F1B
// (no overlapped cell) gains nothing, DualPipe-V gains exactly the overlapped cells on its
// critical path x the hidden time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette {
namespace {

Program Make(const std::string& name, int p, int m) {
  Result<Schedule> schedule = MakeSchedule(name, ScheduleParams{p, 0, m, 0});
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  return *Lower(*schedule);
}

double Makespan(const Program& program, const Costs& costs) {
  Result<Evaluation> e = Evaluate(program, costs);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? e->makespan : -1;
}

// Per rank, its overlapped cells.
std::vector<int> OverlappedCells(const Program& program) {
  std::vector<int> cells;
  for (const RankProgram& rank : program.ranks) {
    int n = 0;
    for (const Instruction& ins : rank.instructions)
      n += ins.action.kind == ActionKind::kOverlapped;
    cells.push_back(n);
  }
  return cells;
}

Costs WithAllToAll(int stages, StageCost cost, StageComm comm, bool overlap) {
  Costs costs = Costs::Uniform(stages, cost);
  costs.alltoall.assign(stages, comm);
  costs.overlap_alltoall = overlap;
  return costs;
}

TEST(AllToAllOverlap, CostsOfEveryKind) {
  Costs costs = WithAllToAll(2, {1, 2, 3}, {0.5, 0.25}, true);
  const Action f = Action::F(0, 0), i = Action::Make(ActionKind::kInputBackward, 1, 0);
  EXPECT_DOUBLE_EQ(costs.Of(f), 1.5);
  EXPECT_DOUBLE_EQ(costs.Of(i), 2.25);
  EXPECT_DOUBLE_EQ(costs.Of(Action::Make(ActionKind::kWeightBackward, 1, 0)), 3);
  EXPECT_DOUBLE_EQ(costs.Of(Action::Make(ActionKind::kFullBackward, 1, 0)), 5.25);
  const Action cell = Action::Overlap(f, Action::B(1, 1));
  EXPECT_DOUBLE_EQ(costs.Compute(cell), 6);
  EXPECT_DOUBLE_EQ(costs.Comm(cell), 0.75);
  EXPECT_DOUBLE_EQ(costs.Of(cell), 6);  // max(6, 0.75)
  costs.alltoall.assign(2, {4, 3});
  EXPECT_DOUBLE_EQ(costs.Of(cell), 7);  // max(6, 4 + 3)
  costs.overlap_alltoall = false;
  EXPECT_DOUBLE_EQ(costs.Of(cell), 13);  // serial
  costs.alltoall.assign(3, {1, 1});
  EXPECT_FALSE(costs.Check(2, 1).ok());
  costs.alltoall.assign(2, {-1, 0});
  EXPECT_FALSE(costs.Check(2, 1).ok());
}

// A dense model has no all-to-all: the overlap model changes nothing, to the bit.
TEST(AllToAllOverlap, DenseDualPipeVIsIdenticalWithAndWithoutTheOverlapModel) {
  const Program program = Make("dualpipe-v", 4, 16);
  for (const bool overlap : {true, false}) {
    Costs dense = Costs::Uniform(program.num_stages(), {1.0, 1.3, 0.7});
    dense.overlap_alltoall = overlap;
    EXPECT_EQ(Makespan(program, dense),
              Makespan(program, Costs::Uniform(program.num_stages(), {1.0, 1.3, 0.7})));
    Costs zero = WithAllToAll(program.num_stages(), {1.0, 1.3, 0.7}, {0, 0}, overlap);
    EXPECT_EQ(Makespan(program, zero), Makespan(program, dense));
  }
}

// With the all-to-all shorter than a cell's compute, every overlapped cell hides its halves'
// a2a_F + a2a_B entirely: each rank's busy time drops by exactly its cells x the hidden time, and
// the step by the cells on its critical path x the hidden time. That path runs through the cells
// of several ranks (more than any one rank holds): the gain is k x (a2a_F + a2a_B) for a whole
// number k >= the most cells of a rank, the same k whatever the hidden time (26 at p=4, m=16).
TEST(AllToAllOverlap, MoeDualPipeVGainsItsOverlappedCellsTimesTheHiddenTime) {
  for (const auto& [p, m, k] :
       {std::tuple{4, 16, 26}, std::tuple{4, 10, 14}, std::tuple{8, 32, -1}}) {
    const Program program = Make("dualpipe-v", p, m);
    const std::vector<int> cells = OverlappedCells(program);
    const int most = *std::max_element(cells.begin(), cells.end());
    ASSERT_GT(cells[0], 0);
    const StageCost cost{1.0, 1.0, 1.0};
    std::vector<double> cells_on_path;
    for (const double hidden : {0.625, 0.3125}) {
      const StageComm comm{0.4 * hidden, 0.6 * hidden};
      const Result<Evaluation> serial =
          Evaluate(program, WithAllToAll(program.num_stages(), cost, comm, false));
      const Result<Evaluation> overlapped =
          Evaluate(program, WithAllToAll(program.num_stages(), cost, comm, true));
      ASSERT_TRUE(serial.ok() && overlapped.ok());
      for (int r = 0; r < p; ++r) {
        EXPECT_NEAR(serial->busy[r] - overlapped->busy[r], cells[r] * hidden, 1e-9) << r;
      }
      cells_on_path.push_back((serial->makespan - overlapped->makespan) / hidden);
    }
    EXPECT_NEAR(cells_on_path[0], std::round(cells_on_path[0]), 1e-9);
    EXPECT_NEAR(cells_on_path[1], cells_on_path[0], 1e-9);
    EXPECT_GE(cells_on_path[0], most - 1e-9);
    if (k > 0) {
      EXPECT_NEAR(cells_on_path[0], k, 1e-9) << "p = " << p << ", m = " << m;
    }
  }
}

// 1F1B has no overlapped cell: the overlap model changes nothing, and the step is the closed form
// (m + p - 1)(F + a2a_F + B + a2a_B).
TEST(AllToAllOverlap, OneFOneBGainsNothing) {
  const Program program = Make("1f1b", 4, 8);
  for (const int n : OverlappedCells(program)) EXPECT_EQ(n, 0);
  const StageCost cost{1.0, 1.0, 1.0};
  const StageComm comm{0.25, 0.375};
  const double with = Makespan(program, WithAllToAll(4, cost, comm, true));
  EXPECT_EQ(with, Makespan(program, WithAllToAll(4, cost, comm, false)));
  EXPECT_DOUBLE_EQ(with, (8 + 4 - 1) * (1.0 + 0.25 + 2.0 + 0.375));
}

}  // namespace
}  // namespace pipette
