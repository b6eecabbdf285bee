// RecordedWork: what a recorded real run (any engine's, from the experiment database) says its
// program was and what each part of it cost, the input of a calibrated simulation
// (`pipette simulate --costs-from RUN`): the schedule and sizes from the run's configuration, every
// stage's F, I, W and B costs (medians over the traced steps, MeasureStageCosts), the message
// sizes, each rank's all-reduce and parameter update (medians over the same steps) and the bytes
// the engine holds (static per rank, per in-flight microbatch per stage). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/measured_costs.h"
#include "pipette/engine/memory_timeline.h"
#include "pipette/store/run_data.h"

namespace pipette {

struct RecordedWork {
  std::int64_t run_id = 0;
  std::string engine;
  std::string schedule;  // a name or csv:FILE, as the run's config has it
  int p = 0, v = 0, m = 0, dp = 1;
  int traced_steps = 0;                   // steps 0..traced_steps-1 have every instruction traced
  std::vector<MeasuredStageCost> stages;  // per stage: medians (without step 0 if later)
  std::vector<std::int64_t> stage_output_bytes;  // per stage: its forward message's bytes
  std::vector<double> allreduce;                 // per rank: median seconds; empty with dp = 1
  std::vector<std::int64_t> allreduce_bytes;     // per rank: gradient bytes it all-reduces
  std::vector<double> optimizer;                 // per rank: median seconds; empty: none traced
  std::vector<double> static_bytes;              // per rank; empty when not recorded
  std::vector<StageMemory> stage_memory;         // per stage; empty when not recorded
  std::vector<double> step_times;                // per traced step, seconds (the run's metric)
  // The machine's speed from step to step (StepSlowdowns): per traced step without step 0 (every
  // step when only one was traced), per rank, its plain computes' measured seconds over what
  // `stages` prices them at. A rank 4% slower than the costs in that step: 1.04.
  std::vector<std::vector<double>> step_slowdown;
  // The engine's time between instructions that wait for nothing (the median gap from the end of
  // one, or the post of a SEND or RECV, to the start of the next, without step 0 when later ones
  // exist; computes that consume a received message are left out: they may have waited); -1 when
  // the trace has no such pair.
  double instruction_gap = -1;
  // A message's time as the engine saw it: the median, over messages whose receiver was already
  // waiting in its RECV when the SEND started (so the RECV's end is the arrival), of arrival -
  // send; without step 0 when later steps exist; -1 when no message qualifies.
  double message_latency = -1;
};

// The rows of `events` with the sharing of `cores` cores taken out of every compute (F, I, W, B
// and OPTIMIZER rows; an overlapped (F;B) cell's two rows are one compute; the rest unchanged).
// While n computes run at once, processor sharing gives each min(1, cores / n) of a core, so a
// row that ran from a to b did the work of integral_a^b min(1, cores / n(t)) dt alone: its end
// becomes its start plus that. The traces hold one data-parallel replica: each of `replicas`
// replicas is taken to compute as it does, at the same moments (n(t) = replicas x its count).
// The cost of an instruction alone, from a run whose ranks shared cores (a CPU engine's
// oversubscribed machine, or the CUDA engine's --virtual-ranks on one GPU: cores = 1), for a
// simulation that shares the cores again instead of replaying the sharing twice.
// REQUIRES: cores >= 1, replicas >= 1.
std::vector<EventRow> ShareOutContention(const std::vector<EventRow>& events, int cores,
                                         int replicas = 1);

// The step slowdowns of RecordedWork::step_slowdown: `trace` (plain instructions) against
// `stages`' costs, for `p` ranks over `steps` traced steps; empty when a rank computed nothing
// costed in one of them.
std::vector<std::vector<double>> StepSlowdowns(const std::vector<TraceEvent>& trace,
                                               const std::vector<MeasuredStageCost>& stages, int p,
                                               int steps);

// Reads `run`. InvalidArgument naming `option` (e.g. "--costs-from = 7") and the rule when the run
// is not a finished real-engine run with a traced program: the simulator's own runs, runs not
// `ok`, runs without instruction events, configs without schedule/p/v/m, a stage with no timed
// forward or no timed backward.
// `statistic` summarises the costs (stages, cells, updates, all-reduces); the instruction gap and
// message latency are medians. `alone_on_cores` > 0 costs the computes and updates from
// ShareOutContention(run.events, alone_on_cores) (the gap and latency keep the measured times).
Result<RecordedWork> RecordedWorkOf(const RunData& run, const std::string& option,
                                    CostStatistic statistic = CostStatistic::kMedian,
                                    int alone_on_cores = 0);

}  // namespace pipette
