// RunComparison: a predicted run (simulated) joined row by row with a measured run of the same
// program, and the statistics of the join: step times, per-kind start and duration errors, the
// worst instructions and peak memory per rank. Pure functions on RunData (store/run_data.h); the
// result holds copies, not pointers into the runs.
//
// The join is exact. Every event is keyed by (replica, rank, step, instr_id, kind): program events
// by their instruction id (an overlapped (F;B) cell is two events with one id, so the kind is part
// of the key), ALLREDUCE and OPTIMIZER (instr_id -1) by (rank, step, kind). Both engines record
// replica 0 only, so every key's replica is 0 today; the key carries it for engines that record
// more. A key in one run and not in the other, one key with a different stage, chunk or
// microbatch in the two runs, a key twice in one run, or a different program (configuration keys
// schedule, pp, v, m, dp, model, micro_batch_size, seq_len; a prediction's costs_from naming
// another run) is an error naming the first mismatch and both runs, never a partial join.
//
// Times: each run's event times start at its own common start, so a start is compared within its
// step. The origin of step k in a run is the earliest start of any of that run's events of step k;
// an event's start in its step is its start minus that origin. Errors are predicted - measured:
//   start error      (pred start - pred origin) - (meas start - meas origin), in seconds, and as a
//                    fraction of the measured step span (origin to the latest end of the step's
//                    events, in the measured run);
//   duration error   pred duration - meas duration, in seconds, and relative: that / meas
//                    duration (left out of the relative statistics where the measured duration is
//                    0, e.g. an instantaneous SEND).
// Percentiles interpolate linearly between the closest ranks (NumPy's default): of the n sorted
// values x[0..n-1], percentile q is x[i] + f (x[i+1] - x[i]) with i + f = q / 100 (n - 1). The
// median is percentile 50 (the mean of the two middle values for even n).
//
// Example:
//   Result<RunComparison> c = CompareRuns(sim_run, cpu_run, /*worst=*/10);
//   if (c.ok()) for (const KindErrors& k : c->kinds) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/run_data.h"

namespace pipette {

// The identity of one event in a run, ordered (replica, rank, step, instr_id, kind).
struct EventKey {
  int replica = 0;
  int rank = 0;
  int step = 0;
  int instr_id = 0;  // -1 for ALLREDUCE and OPTIMIZER
  EventKind kind = EventKind::kF;

  friend auto operator<=>(const EventKey&, const EventKey&) = default;
};

// "replica 0 rank 1 step 0 instr 7 (F)"; ALLREDUCE and OPTIMIZER without the instr.
std::string DescribeKey(const EventKey& key);

// One joined event: the same instruction in both runs, its times within its step, its errors.
struct EventPair {
  EventKey key;
  int stage = 0;  // -1 for ALLREDUCE and OPTIMIZER
  int microbatch = 0;
  double predicted_start_s = 0;  // from the step's origin in the predicted run
  double measured_start_s = 0;   // from the step's origin in the measured run
  double predicted_duration_s = 0;
  double measured_duration_s = 0;
  double start_error_s = 0;                  // predicted - measured start
  double start_error_frac = 0;               // start_error_s / the measured step span
  double duration_error_s = 0;               // predicted - measured duration
  std::optional<double> duration_error_rel;  // duration_error_s / measured; none when that is 0
  // How far the predicted interval is from the measured one: max(|start error|, |end error|).
  double displacement_s() const;
};

// The percentile `q` in [0, 100] of `values`, linearly interpolated (see the file comment); 0 when
// `values` is empty.
double Percentile(std::vector<double> values, double q);

// Median and 90th percentile of one error over a set of events.
struct ErrorStats {
  int count = 0;
  double median = 0;
  double p90 = 0;
};

// The errors of one event kind. Percentiles are of absolute errors; the signed median says
// whether the prediction is early/late or short/long.
struct KindErrors {
  EventKind kind = EventKind::kF;
  int count = 0;
  ErrorStats start_abs_s;                 // |start error| in seconds
  ErrorStats start_abs_frac;              // |start error| / measured step span
  ErrorStats duration_abs_rel;            // |relative duration error|, measured duration > 0 only
  double duration_signed_median_rel = 0;  // the median of the signed relative duration error
  ErrorStats duration_abs_s;              // |duration error| in seconds
};

// One traced step: its span (origin to latest end) in each run.
struct StepSpan {
  int step = 0;
  double predicted_s = 0;
  double measured_s = 0;
  double error_rel = 0;  // (predicted - measured) / measured; 0 when measured is 0
};

// The steady-state step time of each run over the traced steps (RunData::SteadyStepTime; absent
// when either run has no step_time_s).
struct StepTime {
  double predicted_s = 0;
  double measured_s = 0;
  double error_rel = 0;  // (predicted - measured) / measured
};

// Peak memory of one rank (metric peak_memory_bytes[r]) in both runs.
struct RankPeakMemory {
  int rank = 0;
  double predicted_bytes = 0;
  double measured_bytes = 0;
  double error_rel = 0;  // (predicted - measured) / measured; 0 when measured is 0
};

struct RunComparison {
  std::int64_t predicted_run = 0;
  std::int64_t measured_run = 0;
  std::string predicted_engine, measured_engine;
  std::optional<StepTime> step_time;   // both runs have step_time_s
  std::vector<StepSpan> steps;         // ascending step
  std::vector<KindErrors> kinds;       // kinds present, in EventKind order
  KindErrors all;                      // every event (kind is meaningless here)
  KindErrors compute;                  // the F, I, W and B events together (kind meaningless)
  std::vector<EventPair> worst;        // largest displacement_s first (ties: key order)
  std::vector<RankPeakMemory> memory;  // ranks with peak_memory_bytes[r] in both runs
  std::size_t pairs = 0;               // joined events
};

// Which of `a` and `b` is the prediction: a "sim" run is always the prediction (so a measured A
// and a simulated B swap); otherwise (sim and sim, cpu and cpu) A predicts B. Returns
// {predicted, measured}.
std::pair<const RunData*, const RunData*> OrderForComparison(const RunData& a, const RunData& b);

// Joins `predicted` and `measured` (see the file comment) and computes the statistics, keeping the
// `worst` (>= 0) most displaced events. InvalidArgument naming both runs and the first mismatching
// configuration key or event key, a key twice in one run, or a run without events.
Result<RunComparison> CompareRuns(const RunData& predicted, const RunData& measured, int worst);

}  // namespace pipette
