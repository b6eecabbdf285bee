// ChromeTrace: what pipette reads from one rank's PyTorch profiler trace (torch.profiler's
// export_chrome_trace, Kineto's JSON; plain or gzip), streamed through a SAX parser so that a trace
// of hundreds of MB is read in memory proportional to the events kept, not to the file:
//   - distributedInfo.rank and .world_size (torch.distributed initialised);
//   - the user_annotation ranges a pipeline run writes: "PP:<action>" (every action of
//     _PipelineScheduleRuntime), "Forward <i>" / "Backward <i>" (ScheduleGPipe),
//     "ProfilerStep#<N>" (prof.step()) and "Optimizer.step#..." (torch.optim);
//   - the host ranges of point-to-point communication: names starting "gloo:", "nccl:" or
//     "c10d::" (gloo:recv, nccl:coalesced, c10d::recv_, ...);
//   - every CUDA runtime or driver call that carries a correlation id (a kernel launch) and every
//     GPU kernel (its correlation id, and whether it is NCCL's: a name starting "nccl").
// Times are seconds from the trace's first kept event, read exactly (Kineto's ts: microseconds with
// up to 3 decimals, counted from baseTimeNanoseconds when the trace has it, else from 1970);
// origin_ns is that event's absolute time, on which the importer aligns the ranks. Everything else
// is skipped. docs/import.md says what is read from where.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/common/status.h"

namespace pipette {

struct TraceRange {
  std::string name;
  double start = 0, end = 0;  // seconds
  std::int64_t tid = -1;      // the host thread (-1: not a number in the trace)
};

struct KernelLaunch {
  double time = 0;  // seconds: when the host called it
  std::int64_t correlation = 0;
};

struct GpuKernel {
  double start = 0, end = 0;  // seconds
  std::int64_t correlation = 0;
  bool communication = false;  // NCCL's
};

struct ChromeTrace {
  std::string path;
  std::string sha256;          // of the file's bytes as stored
  int rank = -1;               // distributedInfo.rank; -1 when the trace has none
  int world_size = -1;         // distributedInfo.world_size; -1 when the trace has none
  std::int64_t origin_ns = 0;  // the absolute time of time 0: baseTimeNanoseconds + the first ts
  std::vector<TraceRange> annotations;     // pipeline, step and optimizer ranges
  std::vector<TraceRange> communications;  // host ranges of point-to-point communication
  std::vector<KernelLaunch> launches;
  std::vector<GpuKernel> kernels;
};

// Reads the trace at `path` (gzip or plain). IoError naming the path when it cannot be read;
// InvalidArgument naming the path and what is wrong when it is not a Chrome trace: not JSON (with
// the byte offset), no traceEvents array, a kept event without a number ts or with a negative
// dur (with its index), a distributedInfo rank or world size that is not one.
Result<ChromeTrace> ReadChromeTrace(const std::string& path);

}  // namespace pipette
