// Schedule: a pipeline schedule in compute-only form, one ordered action list per rank (MPMD).
//
// A Schedule is what a ScheduleGenerator produces and what a custom CSV file holds: p ranks, S
// stages placed on them, m microbatches, and for every rank the exact order of its F, I, W, B and
// overlapped (F;B) actions. Each microbatch follows a route, the consecutive stages first..last it
// passes through: all of 0..S-1 for ordinary pipelines; for DualPipe the down half of the
// microbatches passes stages 0..p-1 and the up half p..2p-1. Communication is added by lower().
// Plain value type; no invariants are enforced on construction: validate() checks them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pipette/schedule/action.h"
#include "pipette/schedule/placement.h"

namespace pipette {

// The inclusive range of consecutive global stages a microbatch passes through.
struct StageRange {
  int first = 0;
  int last = 0;
  bool contains(int stage) const { return stage >= first && stage <= last; }
  friend bool operator==(const StageRange&, const StageRange&) = default;
};

// The dataflow between stages, in one place for validate, lower, evaluate and the engines. For a
// plain compute action `a` of a microbatch whose route is `route`:
// Returns the stage whose output `a` takes as input (F: the stage before, I/B: the stage after), or
// -1 when it has none (F on the route's first stage, I/B on its last, and W, whose input is its own
// stage's I).
inline int InputStage(const StageRange& route, const Action& a) {
  if (a.kind == ActionKind::kForward) return a.stage > route.first ? a.stage - 1 : -1;
  if (IsInputBackward(a.kind)) return a.stage < route.last ? a.stage + 1 : -1;
  return -1;
}
// Returns the stage that takes a's output as input (F: the stage after, I/B: the stage before), or
// -1 when none does.
inline int ConsumerStage(const StageRange& route, const Action& a) {
  if (a.kind == ActionKind::kForward) return a.stage < route.last ? a.stage + 1 : -1;
  if (IsInputBackward(a.kind)) return a.stage > route.first ? a.stage - 1 : -1;
  return -1;
}

// User-facing shape of a schedule request. Zero means "the schedule's default".
struct ScheduleParams {
  int p = 0;           // pipeline ranks
  int v = 0;           // stages (chunks) per rank
  int m = 0;           // microbatches per step
  int group_size = 0;  // interleaved schedules: microbatches per chunk group (Megatron's G)
};

struct Schedule {
  std::string name;  // CLI name of the generator, or "csv:FILE"
  int p = 0;
  int v = 0;
  int m = 0;
  Placement placement;
  std::vector<StageRange> routes;          // one per microbatch
  std::vector<std::vector<Action>> ranks;  // compute-only actions per rank, in execution order

  int num_stages() const { return placement.num_stages(); }
  // Total number of compute cells (an overlapped cell counts once).
  std::size_t num_actions() const;
};

// Upper bound on S*m, the (stage, microbatch) chunks of one schedule. Peak memory is about 430
// bytes per chunk through generation, lowering, evaluation and output (6.9 GB at this limit), and
// a typo such as -m 1000000000 becomes an error instead of an exhausted machine.
inline constexpr long long kMaxScheduleChunks = 16'000'000;
// Upper bound on p: far beyond any real pipeline, and it keeps generators whose warmup grows with
// p (O(p^2) over all ranks) well under a second.
inline constexpr int kMaxPipelineRanks = 16'384;

// Returns a schedule with p empty rank lists, the given placement and every microbatch routed
// through all stages 0..S-1.
Schedule MakeEmptySchedule(std::string name, int p, int v, int m, Placement placement);

}  // namespace pipette
