// A test helper that writes what a profiled PyTorch pipeline run writes (one Chrome trace per
// rank, Kineto's format as docs/import.md describes it), for a run given as pipette's own trace of
// a program: every instruction's true start and end (a simulation's), so that an import must give
// those times back. Forms: the runtime's "PP:<action>" ranges or GPipe's "Forward i" /
// "Backward i"; host only (gloo: a compute's range opens when the rank reaches it and includes the
// wait for its receive, shown as a gloo:recv range from the post to the arrival) or with GPU
// kernels (short host ranges that launch them, cudaLaunchKernel with correlation ids, ac2g flows,
// the kernels at the true times, NCCL kernels for receives, gpu_user_annotation copies).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/engine/rank_interpreter.h"
#include "pipette/engine/rank_runtime.h"
#include "pipette/schedule/program.h"

namespace pipette::testing {

struct SyntheticTraceOptions {
  bool gpipe = false;            // "Forward i" / "Backward i" instead of "PP:<action>"
  bool device = false;           // GPU kernels
  bool profiler_steps = true;    // ProfilerStep#N ranges
  bool gzip = false;             // write .json.gz
  bool distributed_info = true;  // distributedInfo {rank, world_size}
  // Per rank: nanoseconds added to its baseTimeNanoseconds (1.7e18, late 2023, plus this) and taken
  // off every ts: the same moments on the common clock, written from different bases.
  std::vector<std::int64_t> base_ns;
  std::string prefix = "trace";  // files PREFIX-rankR.json[.gz] in the directory
  // Data-parallel replicas: pipeline rank r's trace written for global ranks r * dp + d (the
  // pipeline the outer dimension of the mesh, as torchtitan's), replica d `replica_delay_ns`
  // times d later than replica 0.
  int dp = 1;
  std::int64_t replica_delay_ns = 0;
};

struct SyntheticTraces {
  std::vector<std::string> paths;  // pipeline rank by pipeline rank, replica by replica
  double origin = 0;  // the earliest range written: the imported run's time 0, on the trace's clock
};

// Writes the traces of `trace` (instructions of `program`, any order) and `updates` (parameter
// updates: "Optimizer.step#AdamW.step" ranges) into `dir`.
SyntheticTraces WriteSyntheticTraces(const Program& program, const std::vector<TraceEvent>& trace,
                                     const std::vector<AllReduceEvent>& updates,
                                     const std::string& dir, const SyntheticTraceOptions& options);

}  // namespace pipette::testing
