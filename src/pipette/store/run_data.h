// RunData: one run of one engine as the experiment database holds it (docs/trace_schema.md), in
// memory. The store writes and reads it; plots and exports draw from it. Plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipette/common/status.h"

namespace pipette {

// What an event row records. An overlapped (F;B) cell is two events (F and B, or F and I) sharing
// one instr_id.
enum class EventKind : std::uint8_t {
  kF,
  kI,
  kW,
  kB,
  kSendF,
  kRecvF,
  kSendB,
  kRecvB,
  kAllReduce,
  kOptimizer,
};

// "F", "I", "W", "B", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "ALLREDUCE", "OPTIMIZER".
std::string_view EventKindName(EventKind kind);
// The inverse of EventKindName; InvalidArgument quoting `text` otherwise.
Result<EventKind> ParseEventKind(std::string_view text);

struct EventRow {
  int rank = 0;
  int step = 0;
  int instr_id = 0;  // index in the rank's program; -1 for ALLREDUCE and OPTIMIZER
  EventKind kind = EventKind::kF;
  int stage = 0;       // global stage; -1 for ALLREDUCE and OPTIMIZER
  int chunk = 0;       // the stage's index among its rank's stages (0 = first chunk)
  int microbatch = 0;  // -1 for ALLREDUCE and OPTIMIZER
  double start_s = 0;  // seconds from the run's common start; RECV: when posted
  double end_s = 0;    // RECV: when its data arrived
  std::int64_t bytes = 0;
};

struct MemoryRow {
  int rank = 0;
  double t_s = 0;
  double bytes = 0;  // allocated from t_s on
};

struct MetricRow {
  std::string name;  // docs/metrics.md; per-rank values are named "name[r]"
  double value = 0;
  std::string unit;
};

// Appends one metric row "name[k]" per value (per rank, per step).
void AddPerRank(std::vector<MetricRow>& metrics, const std::string& name,
                const std::vector<double>& values, const std::string& unit);

inline constexpr std::string_view kRunRunning = "running";
inline constexpr std::string_view kRunOk = "ok";
inline constexpr std::string_view kRunOom = "oom";
inline constexpr std::string_view kRunFailed = "failed";

struct RunRecord {
  std::int64_t id = 0;
  std::int64_t experiment_id = 0;  // 0: none
  std::string engine;              // "sim", "cpu" or "cuda"
  std::string config;              // the full resolved configuration, JSON
  std::string version;             // pipette's
  std::string git_rev;
  std::string libraries;  // JSON object: library -> version
  std::string host;
  std::int64_t pid = 0;
  std::string started_at;  // ISO 8601 UTC
  std::string ended_at;    // empty while running
  std::string status;      // kRunRunning, kRunOk, kRunOom, kRunFailed
  std::string error;
};

struct RunData {
  RunRecord run;
  std::vector<EventRow> events;
  std::vector<MemoryRow> memory;
  std::vector<MetricRow> metrics;

  // The value of metric `name`, or `fallback` when the run has none.
  double Metric(std::string_view name, double fallback = 0) const;
  // 1 + the largest rank in the events and memory rows (0 for an empty run).
  int NumRanks() const;
  // The steady-state step time of steps 0..steps-1: the mean of step_times_s[k] over those with
  // k >= 1 (step 0 warms up: first-touch allocations, cold caches), over step 0 when only it is
  // there, and step_time_s when the run has no per-step times. The step time fidelity is judged
  // by (pipette compare, plot compare); a prediction and its measurement compare the same steps.
  double SteadyStepTime(int steps = 1 << 30) const;
};

// The steady-state step times (RunData::SteadyStepTime) of a prediction and of the run it
// predicts, both over the steps the prediction simulated (it simulates the measured run's traced
// ones; every step of the measured run when the prediction has no per-step times), in seconds:
// {predicted, measured}.
std::pair<double, double> PairedSteadyStepTimes(const RunData& predicted, const RunData& measured);

}  // namespace pipette
