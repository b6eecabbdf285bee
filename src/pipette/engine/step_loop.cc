#include "pipette/engine/step_loop.h"

#include <optional>
#include <span>

namespace pipette {

Status RunSteps(const Program& program, int rank, const MessageSizes& sizes,
                const StepLoopOptions& options, RankRuntime& runtime, RankLog& log) {
  std::vector<TraceEvent> scratch;  // the events of untraced steps, dropped
  for (int step = 0; step < options.steps; ++step) {
    PIPETTE_RETURN_IF_ERROR(runtime.BeginStep(step));
    const double start = runtime.Now();
    const bool traced = step < options.trace_steps;
    scratch.clear();
    std::vector<TraceEvent>& events = traced ? log.trace : scratch;
    const std::size_t first = events.size();
    RunRank(program, rank, step, sizes, runtime, events);
    runtime.EndProgram(step);
    runtime.TimeProgram(step, std::span<TraceEvent>(events).subspan(first));
    if (const std::optional<Span> reduce = runtime.ReduceGradients(step); reduce && traced) {
      log.allreduces.push_back({rank, step, reduce->start, reduce->end, options.gradient_bytes});
    }
    const double update_start = runtime.Now();
    PIPETTE_RETURN_IF_ERROR(runtime.UpdateParameters(step));
    if (traced) log.updates.push_back({rank, step, update_start, runtime.Now(), 0});
    const Span span{start, runtime.Now()};
    log.steps.push_back(span);
    runtime.EndStep(step, span);
    if (options.after_step) options.after_step(step, log);
  }
  return Status::Ok();
}

}  // namespace pipette
