// PyTorch import: a run of PyTorch's pipelining (torch.distributed.pipelining), read from one
// profiler trace per rank (chrome_trace.h), mapped onto pipette's program of its schedule and
// made into the rows of ONE run with engine "pytorch" (store/run_data.h), so that replay
// (simulate --costs-from), compare and the plots read it as they read pipette's own engines' runs.
//
// What is read (docs/import.md):
//   - the actions: "PP:<action>" ranges (every schedule that runs through
//     _PipelineScheduleRuntime, and every CSV schedule), in PyTorch's notation (`2F0`, `1SEND_F3`,
//     `(0F7;7B3)OVERLAP_F_B`, `3REDUCE_GRAD`; UNSHARD and RESHARD are skipped), or ScheduleGPipe's
//     "Forward <i>" / "Backward <i>" (computes of the rank's one stage, with its receives and sends
//     inside; messages recorded when the trace shows the communication). Schedule1F1B names none:
//     such a run is read when it ran from a CSV through the runtime.
//   - the steps: "ProfilerStep#<N>" ranges when the loop called prof.step(), else each action's
//     k-th occurrence on its rank is step k.
//   - the times, on one clock (every rank's trace shifted by its baseTimeNanoseconds, the run
//     starting at 0): on a trace with GPU kernels a compute takes its device time, from the first
//     kernel launched inside its range to the end of the last (correlation ids; NCCL kernels are
//     communication); a RECV ends when its NCCL kernel does; a compute without kernels keeps its
//     host range. On a host-only trace (gloo) a compute starts when the wait for its own receive
//     ends inside its range (the receive's communication ranges: gloo:recv, c10d::recv_, ...), and
//     that moment is the RECV's end. SENDs and RECVs start when posted. A rank's REDUCE_GRAD ranges
//     of a step are its gradient all-reduce, its "Optimizer.step#..." ranges its parameter update
//     (one event each, spanning them).
//   - data parallelism: a rank's pipeline rank is the lowest stage its computes name (loop and V
//     layouts alike); the ranks of one pipeline rank are its replicas, in global rank order, and
//     replica 0's events are the run's (as the other engines record one replica). GPipe's ranges
//     name no stage: one pipeline.
// Every mismatch is InvalidArgument naming the trace or rank, step and action; nothing is
// returned half-made. Pure functions over the traces read.
#pragma once

#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/import/chrome_trace.h"
#include "pipette/schedule/program.h"
#include "pipette/store/run_config.h"
#include "pipette/store/run_data.h"

namespace pipette {

struct PyTorchImportOptions {
  std::string schedule;     // a built-in name or csv:FILE; empty: inferred from the computes' order
  int p = 0, v = 0, m = 0;  // 0: from the traces (p = ranks / dp, v = stages / p, m = microbatches)
  int dp = 0;               // data-parallel replicas; 0: from the traces (KeepReplicaZero)
  std::string model;        // recorded in the configuration when given
};

struct ImportedRun {
  ImportedRunConfig config;
  Program program;
  RunData data;  // engine "pytorch": its configuration, events (pipette's instruction ids), metrics
  int host_timed_computes = 0;  // computes of a device trace that launched no kernel (host range)
};

// The built-in schedules `ImportPyTorchRun` tries, in order, when none is given: PyTorch's own
// (gpipe, 1f1b, interleaved-1f1b, interleaved-gpipe = LoopedBFS, interleaved-zb, zbv, dualpipe-v)
// first, then the rest of pipette's.
std::vector<std::string> ImportCandidateSchedules();

// The run `traces` (one per rank, any order) measured. InvalidArgument naming what is wrong: two
// traces of one rank, a rank missing, a trace without distributedInfo or without pipeline ranges,
// ranks with different step counts, an action the schedule's program does not have on that rank,
// one missing or twice in a step, computes in another order than the schedule's, options that
// disagree with the traces, or no schedule matching them when none is given.
Result<ImportedRun> ImportPyTorchRun(const std::vector<ChromeTrace>& traces,
                                     const PyTorchImportOptions& options);

}  // namespace pipette
