// RankRuntime: what an engine provides underneath the shared interpreter loop (RunRank).
//
// The interpreter decides nothing about timing; it walks one rank's program in order and asks the
// runtime to compute, send, post receives and wait for them. A SimGrid actor, an MPI process on
// the CPU and a CUDA stream with NCCL each implement this interface. One runtime serves one rank
// and is used from that rank's thread of control only.
#pragma once

#include <cstdint>

#include "pipette/schedule/program.h"

namespace pipette {

class RankRuntime {
 public:
  virtual ~RankRuntime() = default;

  // The rank's current time in seconds (simulated or wall clock since the common start).
  virtual double Now() = 0;
  // Runs the compute instruction `ins` for `seconds` (the cost model's time); returns when done.
  virtual void Compute(const Instruction& ins, double seconds) = 0;
  // Starts sending `bytes` for the SEND instruction `ins` to ins.peer; returns at once.
  virtual void Send(const Instruction& ins, std::int64_t bytes) = 0;
  // Posts the receive instruction `ins` (its data may arrive later); returns at once. Receives
  // from one peer are posted in the order that peer sends (lowering guarantees it).
  virtual void PostRecv(const Instruction& ins, std::int64_t bytes) = 0;
  // Blocks until the data of the posted receive `ins` has arrived; returns when it arrived.
  virtual double WaitRecv(const Instruction& ins) = 0;
};

}  // namespace pipette
