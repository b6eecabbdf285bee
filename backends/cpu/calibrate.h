// The measurements behind `pipette calibrate --engine cpu`: what the CPU engine's real runs cost
// beyond their compute, taken with the engine's own MPI calls on the transport mpirun chose.
//
//   MeasureP2p            ping-pong between ranks 0 and 1: MPI_Isend / MPI_Irecv of MPI_FLOAT on
//                         the world communicator, completed by MPI_Wait, as CpuRankRuntime sends
//                         and receives activations; one-way time = half the round trip.
//   MeasureAllReduce      MPI_Allreduce(MPI_IN_PLACE, float, MPI_SUM) over every rank, as
//                         AllReduceGrads (param_sync.h) reduces gradients; the slowest rank's time.
//   MeasureInstructionOverhead
//                         RunRank (engine/rank_interpreter.h) over a lowered 1f1b program on every
//                         rank, with a runtime whose compute is empty and whose messages are real
//                         0-byte MPI messages: per instruction, the time RunRank spends outside
//                         the waits for a peer's data (the interpreter, trace events, posting and
//                         completing the MPI requests). The waits themselves are message latency,
//                         which MeasureP2p covers.
//   MeasureGemmFlops      one core's fp32 sgemm rate (OpenBLAS, one thread) over the GEMMs of the
//                         engine's default model (tiny, micro-batch 4: each linear layer's F, I and
//                         W products), on rank 0 alone or on every rank at once.
//   MeasureGemmTable      one core's time per call of sgemm (OpenBLAS, one thread) over a grid
//                         of shapes, called as each pass of a linear layer calls it (GemmPass:
//                         x W^T, dy W, dW += dy^T x; what the pass just computed in the cache, the
//                         weights or saved input from memory), every rank running the same shape
//                         at once as they do in training.
//   MeasureCopyBandwidth  one rank's memcpy rate of a 64 MiB buffer (bytes read + written).
//   MeasureCalibration    all of the above, fitted (engine/calibration.h): the Calibration
//                         `pipette calibrate` records.
//
// Every function is a collective over `comm` (all its ranks call it) and returns its answer on
// rank 0 (other ranks get zeros or empty vectors). Ranks that wait for others sleep in a
// non-blocking barrier instead of spinning, so they do not take cores from the ranks measuring.
// Call from the rank's MPI thread.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "pipette/engine/calibration.h"

namespace pipette::cpu {

// One size's median time over the repeats.
struct TimedSize {
  std::int64_t bytes = 0;
  double seconds = 0;
};

// 0 and every power of two from 4 bytes (one float) up to `max_bytes`.
std::vector<std::int64_t> CalibrationSizes(std::int64_t max_bytes);

// The seconds a calibration of `repeats` repeats up to `max_bytes` takes, about: each repeat moves
// about 8 x max_bytes between the ranks (the sizes sum to 2 x max_bytes; a round trip, and an
// all-reduce, move each twice) at 3 GB/s, copies 128 MiB at 10 GB/s and spends 2 ms on small
// messages and barriers; one warm-up repeat; 2 s to start. Measured on a 2-core machine (2 ranks):
// up to 16 MiB, 64 MiB and 256 MiB at 3 repeats 1.8, 2.6 and 5.3 s (estimates 2.2, 2.8, 4.9),
// 256 MiB at 12 repeats 11.2 s (11.5), 4 bytes at 200 repeats 3.7 s (5.1); 10,000 repeats up to
// 1 GiB about 7.7 h (8.0 h).
double EstimateCalibrationSeconds(int repeats, std::int64_t max_bytes);

// The longest calibration `pipette calibrate` starts (the defaults take seconds).
inline constexpr double kMaxCalibrationSeconds = 1800;

// REQUIRES: comm has at least 2 ranks; every size a multiple of 4.
std::vector<TimedSize> MeasureP2p(const std::vector<std::int64_t>& sizes, int repeats,
                                  MPI_Comm comm);
std::vector<TimedSize> MeasureAllReduce(const std::vector<std::int64_t>& sizes, int repeats,
                                        MPI_Comm comm);
// Seconds per instruction: the median over `repeats` steps of the largest per-rank mean.
double MeasureInstructionOverhead(int repeats, MPI_Comm comm);
// FLOP/s of one core: rank 0's alone (`all_ranks` false) or the mean over the ranks running at
// once (`all_ranks` true). Each rank runs the GEMMs for at least `seconds`.
double MeasureGemmFlops(bool all_ranks, double seconds, MPI_Comm comm);
// Rank 0's median time per call over `repeats` repeats (after a warm-up) of every pass and shape
// of the grid `sizes` x `sizes` x `sizes` (m, n, k), each repeat at least kGemmRepeatSeconds long,
// every rank running the same shape between barriers. The repeats are rounds over the whole grid
// (a shape's three passes back to back), so that a slow spell of the machine costs every entry at
// most a round, which its median drops, instead of one pass or one band of shapes all of theirs.
inline constexpr double kGemmRepeatSeconds = 0.5e-3;
std::vector<GemmTiming> MeasureGemmTable(const std::vector<std::int64_t>& sizes, int repeats,
                                         MPI_Comm comm);
// The seconds MeasureGemmTable takes, about: each shape's repeat kGemmRepeatSeconds or its FLOPs
// at 80 GFLOP/s, whichever is longer, for every pass, repeat and the warm-up. Measured on the
// 2-core machine (2 ranks, 3 repeats; the whole calibration less one with --gemm-max 0): sizes
// 16-2048 about 21 s (estimate 22), 16-512 about 1.2 s (1.6).
double EstimateGemmTableSeconds(const std::vector<std::int64_t>& sizes, int repeats);
// Bytes per second rank 0 copies (read + write), the median of `repeats` copies.
double MeasureCopyBandwidth(int repeats, MPI_Comm comm);

// What MeasureCalibration measures, and how long.
struct CalibrationRequest {
  int repeats = 20;                                 // of every measurement; the median is kept
  std::int64_t max_bytes = std::int64_t{64} << 20;  // the largest message and all-reduce
  int cores = 0;                 // the machine's usable cores to record; 0: UsableCores()
  double gemm_seconds = 0.5;     // per GEMM measurement and rank
  std::int64_t gemm_max = 2048;  // the GEMM table's largest size (GemmTableSizes); 0: no table
  int gemm_repeats = 3;          // of every shape of the GEMM table
};

// Every measurement above over `comm`: p2p points at CalibrationSizes(max_bytes), all-reduce points
// from 4 bytes (a 0-byte all-reduce returns without communicating, and no engine reduces one), the
// instruction overhead, the GEMM rate alone and contended, the GEMM table (unless gemm_max is 0),
// the copy bandwidth and the machine's RAM, with the alpha-beta fits of both kinds of points. Rank
// 0's answer is the calibration of engine "cpu" with `ranks` the size of `comm` and this build's
// version; its id, host and time are the recorder's to set.
Calibration MeasureCalibration(const CalibrationRequest& request, MPI_Comm comm);

}  // namespace pipette::cpu
