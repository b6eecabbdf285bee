// PyTorch's compute-only CSV for schedules: one line per rank (rank 0 first), one action per cell
// in PyTorch's notation (2F0, 7I3, (0F7;7B3)); empty cells (and PyTorch's "None") are ignored, so
// schedules round-trip with torch.distributed.pipelining and with spreadsheets.
//
// Reading infers everything else from the actions: p is the number of lines, the stages a rank's
// actions touch are placed on that rank, S = 1 + the largest stage (v = S/p), m = 1 + the largest
// microbatch, and each microbatch's route is the range of stages its forwards visit.
#pragma once

#include <string>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

// Returns the compute-only CSV of `schedule`: p lines, each ending in '\n'. Overlapped cells are
// written as PyTorch writes them, "(0F7;7B3)OVERLAP_F_B".
std::string ToComputeCsv(const Schedule& schedule);

// Parses compute-only CSV text into a Schedule named `name` (not yet validated: call Validate()).
// Errors (InvalidArgument) quote the line and cell, or name the stage or rank that breaks a rule.
Result<Schedule> ParseComputeCsv(std::string_view text, std::string name);

// Reads and parses the file at `path`; the schedule is named "csv:<path>".
Result<Schedule> LoadComputeCsv(const std::string& path);

}  // namespace pipette
