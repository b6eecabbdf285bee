// Trace rows: an executed step (any engine's trace, all-reduces and memory over time) as the rows
// the experiment database stores (store/run_data.h). One event row per executed instruction, two
// for an overlapped (F;B) cell (sharing its instr_id), one per all-reduce and per parameter update
// (OPTIMIZER). Pure functions.
#pragma once

#include <vector>

#include "pipette/engine/memory_timeline.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/schedule/program.h"
#include "pipette/store/run_data.h"

namespace pipette {

// The event kind of the rows of a plain action of `kind`, and back (REQUIRES: not an overlapped
// cell, not an all-reduce).
EventKind EventKindOf(ActionKind kind);
ActionKind ActionKindOf(EventKind kind);

// The rows of `trace` (instructions of `program`) followed by `allreduces` (ALLREDUCE rows) and
// `updates` (the parameter updates, OPTIMIZER rows). A row's chunk is its stage's index among its
// rank's stages in ascending stage order.
std::vector<EventRow> ToEventRows(const Program& program, const std::vector<TraceEvent>& trace,
                                  const std::vector<AllReduceEvent>& allreduces = {},
                                  const std::vector<AllReduceEvent>& updates = {});

// Every sample of every rank's timeline, rank by rank.
std::vector<MemoryRow> ToMemoryRows(const std::vector<RankMemoryTimeline>& timelines);

}  // namespace pipette
