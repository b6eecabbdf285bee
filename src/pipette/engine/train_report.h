// TrainReport: what a real training run (CPU or CUDA engine) reports on world rank 0, and how a
// pipelined run is checked against the unpipelined reference. Plain data; every real engine fills
// it the same way, so `pipette train` records and prints one kind of report.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipette/engine/kernel_profile.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/engine/step_loop.h"
#include "pipette/engine/train_plan.h"

namespace pipette {

// Tensors by parameter name, flattened.
using NamedTensors = std::map<std::string, std::vector<float>>;

struct Mismatch {
  double max_relative_error = 0;     // max over tensors of ||a - b|| / ||b|| (||a - b|| if b = 0)
  std::string worst;                 // the tensor where it is reached
  double global_relative_error = 0;  // ||a - b|| / ||b|| over all tensors as one vector
};

// A pipelined run against the unpipelined reference. Gradients after step 1 must agree tensor by
// tensor. Parameters after N steps are compared as one vector: AdamW divides each gradient by its
// own running magnitude, so a gradient that is analytically zero (the key bias of attention:
// softmax ignores a constant shift of the scores) becomes unit-size updates of rounding noise,
// different in every summation order. Such tensors drift apart at 1e-4 relative after a few steps
// while the model as a whole agrees to 1e-6; `parameters.worst` still names them.
struct Verification {
  Mismatch gradients;              // after step 1: max_relative_error is the check
  Mismatch parameters;             // after the last step: global_relative_error is the check
  double max_loss_difference = 0;  // max over steps of |loss - reference loss|
  bool Passes(double tolerance) const {
    return gradients.max_relative_error <= tolerance &&
           parameters.global_relative_error <= tolerance;
  }
};

struct TrainReport {                       // complete on world rank 0 only
  std::vector<double> losses;              // per step: mean loss over the step's tokens
  std::vector<double> step_times;          // per step, seconds (barrier to the end of the update)
  double tokens_per_s = 0;                 // over all steps
  std::int64_t params = 0;                 // distinct parameters of the model
  std::vector<TraceEvent> trace;           // replica 0, every pipeline rank, every step
  std::vector<AllReduceEvent> allreduces;  // replica 0
  std::vector<AllReduceEvent> updates;     // replica 0: each rank's parameter update per step
  // Per pipeline rank (the maximum over replicas): tensor bytes at their peak, the part held for
  // the whole run (weights, gradients, AdamW moments), and the process's peak resident set.
  std::vector<double> peak_memory_bytes;
  std::vector<double> static_bytes;
  std::vector<double> peak_rss_bytes;
  // Per pipeline rank, the engine's device time of its compute instructions over all steps (the
  // CUDA engine's events; empty for an engine without a device clock), beside the trace's
  // host-clock durations.
  std::vector<double> device_compute_seconds;
  // Per pipeline rank of replica 0, over all steps: the CPU time of its computes' own work, and of
  // the busy waits that slow it down (--rank-speed: (1/speed - 1) x the work of each compute).
  std::vector<double> compute_work_seconds;
  std::vector<double> slowdown_seconds;
  std::vector<StageMemory> stage_memory;  // measured bytes held per microbatch, per stage
  // The kernels of replica 0's pipeline ranks over `kernel_profile_steps` steps (kernel_profile.h;
  // empty for an engine that does not profile).
  std::vector<KernelSample> kernels;
  int kernel_profile_steps = 0;
  std::optional<Verification> verification;
};

// Called on world rank 0 after each step of a real run (step from 0, its mean loss and time).
using StepCallback = std::function<void(int step, double loss, double seconds)>;

// Called on world rank 0 after each finished step of a run that records as it goes, with that
// step's report: its loss and time (one value each), replica 0's events of it on every pipeline
// rank (none for an untraced step) and every rank's memory figures so far.
using StepReportCallback = std::function<void(int step, const TrainReport& step_report)>;

// What one rank of a real run contributes to world rank 0's report.
struct RankContribution {
  double peak_bytes = 0;      // tensor bytes at their peak
  double static_bytes = 0;    // held for the whole run: weights, gradients, optimizer state
  double peak_rss_bytes = 0;  // the process's peak resident set
  double device_compute_seconds = -1;     // device time of its computes; < 0: not measured
  std::int64_t owned_elements = 0;        // parameters this rank reports (0 outside replica 0)
  double compute_work_seconds = 0;        // CPU time of its computes' work, all steps
  double slowdown_seconds = 0;            // CPU time of its busy waits (--rank-speed)
  std::vector<StageMemory> stage_memory;  // per stage of the schedule (zero where not held)
  std::vector<KernelSample> kernels;      // replica 0: its kernel profile
  int kernel_profile_steps = 0;
  RankLog log;  // replica 0: trace, all-reduces, updates (spans unused)
};

// The contribution as bytes and back (the ranks' gathers move bytes).
std::vector<char> PackContribution(const RankContribution& c);
RankContribution UnpackContribution(const std::vector<char>& bytes, int num_stages);

// World rank 0's report: its runtime's per-step losses and times and every world rank's
// contribution, in world rank order (per pipeline rank the maximum over replicas).
TrainReport AssembleReport(const TrainPlan& plan, const TrainOptions& options,
                           std::vector<double> losses, std::vector<double> step_times,
                           const std::vector<RankContribution>& ranks);

// The bytes of every message of the plan's program (fp32 activations and gradients).
MessageSizes MessageSizesOf(const TrainPlan& plan);

// This process's peak resident set in bytes.
double PeakRssBytes();

// The index of the first loss that is not finite (NaN or infinite: the run diverged), if any.
std::optional<int> FirstNonFiniteLoss(const std::vector<double>& losses);

}  // namespace pipette
