// RankRuntime: what an engine provides underneath the shared loops, RunRank (one step's program,
// rank_interpreter.h) and RunSteps (the training steps around it, step_loop.h).
//
// The loops decide nothing about timing or math: RunRank walks one rank's program in order and
// asks the runtime to compute, send, post receives and wait for them; RunSteps runs the step
// (program, data-parallel gradient reduction, parameter update) and asks the runtime for each
// part. What an instruction costs is the runtime's business: the SimGrid runtime holds the cost
// model's seconds and executes them, a real engine runs the math and the clock tells. A SimGrid
// actor, an MPI process on the CPU and a CUDA stream with NCCL each implement this interface; a
// fake runtime with a virtual clock tests the loops alone (tests/engine). One runtime serves one
// rank and is used from that rank's thread of control only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "pipette/common/status.h"
#include "pipette/schedule/program.h"

namespace pipette {

// One executed instruction of one rank (RunRank yields one per instruction).
struct TraceEvent {
  int rank = 0;
  int instr_id = 0;  // index in the rank's program
  int step = 0;      // training step
  Action action;
  double start = 0;  // seconds; for a RECV: when posted
  double end = 0;    // for a RECV: when its data arrived (never before it was posted)
  std::int64_t bytes = 0;
};

// A stretch of one rank's time: a step (from its start to its last part) or a collective. A
// collective's start is engine-defined: the SimGrid runtime starts it once every participant is
// ready; a real engine on entry, so its wait for the others is inside the span.
struct Span {
  double start = 0;  // seconds
  double end = 0;
};

class RankRuntime {
 public:
  virtual ~RankRuntime() = default;

  // ---- one step's program (RunRank) ----

  // The rank's current time in seconds (simulated, or wall clock since the run's common start).
  virtual double Now() = 0;
  // Called before each instruction, outside its traced event: what dispatching it costs. A real
  // engine spends that time anyway (nothing to do here); a simulated one spends its model of it.
  virtual void Dispatch(const Instruction& /*ins*/) {}
  // Runs the compute instruction `ins`; returns when done, or, for a runtime that times its
  // instructions on a device (see TimeProgram), once the work is queued there.
  virtual void Compute(const Instruction& ins) = 0;
  // Starts sending `bytes` for the SEND instruction `ins` to ins.peer; returns at once.
  virtual void Send(const Instruction& ins, std::int64_t bytes) = 0;
  // Posts the receive instruction `ins` (its data may arrive later); returns at once. Receives
  // from one peer are posted in the order that peer sends (lowering guarantees it).
  virtual void PostRecv(const Instruction& ins, std::int64_t bytes) = 0;
  // Blocks until the data of the posted receive `ins` has arrived; returns when it arrived. A
  // device-timed runtime instead orders the data before the computes that follow and returns.
  virtual double WaitRecv(const Instruction& ins) = 0;
  // After EndProgram: `events` are this step's trace events of the rank, program order, timed by
  // Now() as RunRank dispatched them. A runtime whose Compute and WaitRecv return before the work
  // is done (the CUDA engine: its host queues the step, its device runs it) sets their true times
  // here, on the same clock; by default the dispatch times are the times.
  virtual void TimeProgram(int /*step*/, std::span<TraceEvent> /*events*/) {}

  // ---- the training step around it (RunSteps); by default each does nothing ----

  // Before the program of `step` (the instructions that follow belong to it): e.g. wait for the
  // other ranks, reset per-step state. Steps count from 0.
  virtual Status BeginStep(int /*step*/) { return Status::Ok(); }
  // After the rank's last instruction: e.g. complete the step's sends.
  virtual void EndProgram(int /*step*/) {}
  // The data-parallel gradient reduction over the replicas of this rank; returns when it ran, or
  // nullopt when there is none (one replica).
  virtual std::optional<Span> ReduceGradients(int /*step*/) { return std::nullopt; }
  // Sums the gradients of parameters held in several copies, then the optimizer updates them.
  virtual Status UpdateParameters(int /*step*/) { return Status::Ok(); }
  // The step is over on this rank (it began at span.start): e.g. reduce and report the loss.
  virtual void EndStep(int /*step*/, const Span& /*span*/) {}
};

}  // namespace pipette
