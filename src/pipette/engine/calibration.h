// Calibration: what `pipette calibrate --engine cpu` measured on a machine beyond compute, for the
// simulator to predict that machine's real runs (`simulate --calibration ID`): the one-way time of
// a point-to-point message against its size, the data-parallel all-reduce time against its size,
// the engine's own cost per program instruction, one core's fp32 GEMM rate, alone and with every
// rank running at once, and its time per GEMM over a grid of shapes (engine/gemm_table.h). The raw
// points are kept beside the fits. Stored in the experiment database
// (ExperimentDb::RecordCalibration, tables `calibrations` and `calibration_points`,
// docs/trace_schema.md); measured by a real engine (backends/cpu/calibrate.h: MeasureCalibration),
// so it lives in the engine layer, beside what engines measure. Plain values; FitAlphaBeta and
// HostClusterSpec are pure functions.
//
// Example:
//   Calibration c;
//   c.p2p = FitAlphaBeta(p2p_points);            // seconds = alpha + beta * bytes
//   double t = c.p2p.Of(1 << 20);                // one 1 MiB message
//   PIPETTE_ASSIGN_OR_RETURN(std::int64_t id, db.RecordCalibration(c));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/engine/gemm_table.h"

namespace pipette {

struct CalibrationPoint {
  std::string what;  // "p2p" (one-way time of a message between two ranks) or "allreduce"
  int ranks = 2;     // processes taking part
  std::int64_t bytes = 0;
  double seconds = 0;  // the median over repeats
};

// The kinds of points a calibration holds.
inline constexpr std::string_view kCalibrationP2p = "p2p";
inline constexpr std::string_view kCalibrationAllReduce = "allreduce";

struct AlphaBeta {   // seconds = alpha + beta * bytes, least squares over the points
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per byte
  double Of(std::int64_t bytes) const { return alpha + beta * static_cast<double>(bytes); }
};

struct Calibration {
  std::int64_t id = 0;     // set by the database
  std::string engine;      // "cpu"
  std::string host;        // hostname
  std::string created_at;  // ISO 8601 UTC
  int ranks = 0;           // processes it was measured with
  int cores = 0;           // usable cores of the machine (sched_getaffinity)
  AlphaBeta p2p;           // one message between two ranks
  AlphaBeta allreduce;     // MPI_Allreduce (the engine's gradient reduction) over `ranks`
  double instruction_overhead_s = 0;  // engine time per program instruction beyond its work
  double gemm_flops = 0;        // FLOP/s of one core (fp32 sgemm, OpenBLAS 1 thread, the engine's
                                // shapes) while every rank runs one (the contended rate)
  double gemm_flops_alone = 0;  // the same with one rank running
  std::vector<CalibrationPoint> points;  // the raw measurements
  // One core's time per call of a GEMM over a grid of shapes (GemmTableSizes in m, n and k), every
  // rank running the same shape at once; empty when not measured (`--gemm-max 0`, or a
  // calibration older than schema 8). A fit prices GEMMs by it (GemmTable, cost_fit.h).
  std::vector<GemmTiming> gemms;
  // Beyond the interface the simulator reads:
  std::string version;          // the pipette that measured it
  double memory_bytes = 0;      // the machine's RAM (MemTotal)
  double memory_bandwidth = 0;  // bytes/s one rank copies (memcpy of 64 MiB, read + write)
};

// The alpha-beta line through `points` (seconds against bytes) that minimises the sum of squared
// RELATIVE errors, sum(((alpha + beta * b_i) - t_i) / t_i)^2: a weighted least-squares fit with
// weights 1/t_i^2, so a 0-byte message counts as much as a 64 MiB one (an unweighted fit would
// spend its freedom on the largest sizes and leave alpha meaningless). Points whose time is not
// positive are skipped. A negative intercept is refitted through the origin (alpha = 0) and a
// negative slope with beta = 0: a simulator takes neither. Exact on points that lie on a line.
// Fewer than two usable points (or one size only): alpha is their weighted mean, beta 0.
AlphaBeta FitAlphaBeta(const std::vector<CalibrationPoint>& points);

// The points of `calibration` of kind `what`, in their stored order.
std::vector<CalibrationPoint> PointsOf(const Calibration& calibration, std::string_view what);

// The calibrated machine as a cluster (cluster/host_cluster_toml.h writes it): one node named
// "host-calibration-ID" whose "GPUs" are its cores, an fp32 peak of the contended GEMM rate (at
// least 1 GFLOP/s), memory RAM / cores, HBM bandwidth the copy rate (at least 1 MB/s), and both
// links the p2p fit: bandwidth 1/beta (at least 1 MB/s; a fit with beta = 0 takes the largest p2p
// point's rate, 1 GB/s without one), latency alpha clamped to [0, 1 s].
ClusterSpec HostClusterSpec(const Calibration& calibration);

}  // namespace pipette
