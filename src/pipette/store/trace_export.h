// Exports of a recorded run: Chrome trace-event JSON (opens in Perfetto and chrome://tracing) and
// PyTorch's compute-only CSV of the order the ranks actually executed. Functions of RunData alone;
// the trace is streamed (its size is about 190 bytes per event, its document never held whole).
//
// Chrome trace: one process per rank ("rank r"), named threads ("compute", "send", "recv",
// "all-reduce"; a stream whose events overlap in time, such as receives posted ahead of their
// data, is spread over numbered lanes "recv 1", "recv 2", ... so that no two events on one track
// overlap), one complete ("X") event per executed instruction (an overlapped (F;B) cell is one
// event named like "(0F7;7B3)") and per all-reduce, timestamps in microseconds from the run's
// start, with the instruction's stage, microbatch, chunk, step, bytes and id as args.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/store/run_data.h"

namespace pipette {

// OK when `run` has events to export; FailedPrecondition naming the run otherwise (it was recorded
// with --trace none or summary).
Status CheckHasEvents(const RunData& run);

// Writes the run's events to `out` as one line of Chrome trace-event JSON (no newline), one event
// at a time: beyond `run` it holds about 30 bytes per event and 64 more per compute event (tracks,
// the pairing of overlapped halves), never the document.
// Errors: CheckHasEvents's, before anything is written; IoError once `out` fails (writing stops).
Status WriteChromeTrace(std::ostream& out, const RunData& run);

// One line per rank: the compute instructions of training step `step` in the order they started,
// in PyTorch notation ("0F0,0F1,0B0,..."; overlapped cells "(0F7;7B3)OVERLAP_F_B"). Ranks with no
// compute in that step give empty lines. FailedPrecondition when the run has no compute events.
Result<std::string> ToExecutedComputeCsv(const RunData& run, int step = 0);

// `pipette export`: writes `run` as `format` ("chrome": the Chrome trace; "csv": step `step`'s
// executed compute order) to the file `path`, or to standard output when `path` is empty. The file
// is created only once the run proves exportable (a run without events leaves an existing file as
// it was). IoError naming --out (or standard output) when writing fails.
Status ExportRun(const RunData& run, std::string_view format, int step, const std::string& path);

}  // namespace pipette
