// Program: a lowered schedule, what an engine executes (MPMD: one instruction list per rank).
//
// Each rank's list holds its compute actions in schedule order plus explicit communication:
// SEND_F(s,i) right after the forward of stage s whose output goes to another rank, RECV_F(s+1,i)
// on that rank, and likewise SEND_B/RECV_B for gradients flowing back. Hand-offs between stages on
// the same rank carry no message. An instruction's id is its index in its rank's list; traces from
// every engine use the same (rank, id). Sends are asynchronous and a receive is a posted buffer: an
// engine may not run the compute action that consumes a receive before the data has arrived, but a
// receive never blocks the instructions after it that do not need its data. Plain value type.
#pragma once

#include <string>
#include <vector>

#include "pipette/schedule/action.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

struct Instruction {
  Action action;
  int peer = -1;  // SEND/RECV: the rank at the other end; -1 for compute
};

struct RankProgram {
  int rank = 0;
  std::vector<Instruction> instructions;
};

struct Program {
  std::string name;
  int p = 0;
  int v = 0;
  int m = 0;
  Placement placement;
  std::vector<StageRange> routes;  // one per microbatch
  std::vector<RankProgram> ranks;

  int num_stages() const { return placement.num_stages(); }
  // Total instructions over all ranks (compute and communication).
  std::size_t num_instructions() const;
};

}  // namespace pipette
