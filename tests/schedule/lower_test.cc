#include "pipette/schedule/lower.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"
#include "test_util.h"

namespace pipette {
namespace {

using testing::MustMake;

std::string ProgramOrder(const Program& program, int r) {
  std::string out;
  for (const Instruction& ins : program.ranks[r].instructions) {
    out += (out.empty() ? "" : " ") + ToString(ins.action);
  }
  return out;
}

TEST(Lower, TwoRankOneFOneBPlacesEachRecvWithItsSend) {
  Program program = *Lower(MustMake("1f1b", 2, 2));
  EXPECT_EQ(ProgramOrder(program, 0), "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1");
  EXPECT_EQ(ProgramOrder(program, 1), "1RECV_F0 1F0 1RECV_F1 1B0 1SEND_B0 1F1 1B1 1SEND_B1");
  for (const Instruction& ins : program.ranks[0].instructions) {
    EXPECT_EQ(ins.peer, IsCompute(ins.action.kind) ? -1 : 1);
  }
}

TEST(Lower, SameRankHandOffsCarryNoMessage) {
  // V layout: rank p-1 holds stages p-1 and p; rank 0 holds 0 and 2p-1.
  Program program = *Lower(MustMake("zbv", 2, 4));
  for (const auto& rank : program.ranks) {
    for (const Instruction& ins : rank.instructions) {
      const Action& a = ins.action;
      if (a.kind == ActionKind::kSendForward) {
        EXPECT_NE(a.stage, 1) << ToString(a);
      }
      if (a.kind == ActionKind::kSendBackward) {
        EXPECT_NE(a.stage, 2) << ToString(a);
      }
    }
  }
}

// Every schedule: the compute projection of the program is the schedule, every SEND has exactly
// one matching RECV on the peer, and each message is sent before the receive is needed.
TEST(Lower, KeepsComputeOrderAndMatchesEverySendWithOneRecv) {
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    Schedule s = MustMake(std::string(g->name()), 4, 8);
    Result<Program> program = Lower(s);
    ASSERT_TRUE(program.ok()) << g->name() << ": " << program.status().message();
    // key: (kind of message, receiving stage, microbatch) -> count
    std::map<std::tuple<int, int, int>, int> sends, recvs;
    for (int r = 0; r < s.p; ++r) {
      std::vector<Action> compute;
      for (const Instruction& ins : program->ranks[r].instructions) {
        const Action& a = ins.action;
        switch (a.kind) {
          case ActionKind::kSendForward:
            EXPECT_EQ(ins.peer, s.placement.rank_of(a.stage + 1));
            ++sends[{0, a.stage + 1, a.microbatch}];
            break;
          case ActionKind::kSendBackward:
            EXPECT_EQ(ins.peer, s.placement.rank_of(a.stage - 1));
            ++sends[{1, a.stage - 1, a.microbatch}];
            break;
          case ActionKind::kRecvForward:
            EXPECT_EQ(s.placement.rank_of(a.stage), r);
            ++recvs[{0, a.stage, a.microbatch}];
            break;
          case ActionKind::kRecvBackward:
            EXPECT_EQ(s.placement.rank_of(a.stage), r);
            ++recvs[{1, a.stage, a.microbatch}];
            break;
          default:
            compute.push_back(a);
        }
      }
      EXPECT_EQ(compute, s.ranks[r]) << g->name() << " rank " << r;
    }
    EXPECT_EQ(sends, recvs) << g->name();
    for (const auto& [key, count] : sends) EXPECT_EQ(count, 1) << g->name();
  }
}

TEST(Lower, ReportsTheDeadlockOfAnInvalidSchedule) {
  Result<Schedule> s = ParseComputeCsv("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n", "x");
  ASSERT_TRUE(s.ok());
  Result<Program> program = Lower(*s);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(program.status().message().rfind("deadlock: rank 0", 0), 0u);
}

}  // namespace
}  // namespace pipette
