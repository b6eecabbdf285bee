// Running a sweep's points as child processes (`pipette sweep`, docs/experiments.md): each point is
// one child (`pipette simulate ...`, or `mpirun ... pipette-train ...`) whose exit code
// (common/exit_code.h) and last line of JSON output say what became of it: it ran and recorded a
// run, another process holds its point, the command rejected its settings, or it failed.
// RunChildren runs them N at a time and reports each as it ends; it runs on the caller's thread and
// kills and reaps every child it started before it returns.
//
// Example:
//   std::vector<ChildCommand> children = ...;  // one per point
//   RunChildren(children, 4, [&](std::size_t k, const PointResult& r) { Show(k, r); }, [] {});
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pipette/common/subprocess.h"

namespace pipette {

// What became of a point.
struct PointResult {
  enum class Outcome { kRan, kHeld, kInvalid, kFailed } outcome = Outcome::kFailed;
  std::int64_t run_id = 0;  // kHeld: the run that holds the point
  std::string status;       // ok or oom (kRan); the holder's status (kHeld)
  std::string message;      // kInvalid, kFailed: why
  double seconds = 0;
};

// The last non-empty line of `text` ("" for none).
std::string LastLine(const std::string& text);

// A finished child: exit 0 with {"held_by_run", "held_status"} as its last line of output is
// kHeld, with {"run_id", "status"} kRan (exit 0 without either is kFailed); exit 2 (the user's
// input) is kInvalid with its last line of standard error as the message; anything else is
// kFailed with the exit described.
PointResult ClassifyPoint(const std::string& out, const std::string& err, const ExitStatus& exit,
                          double seconds);

// What a point's child runs: `program` with the argument vector `argv`.
struct ChildCommand {
  std::string program;
  std::vector<std::string> argv;
};

// Runs `commands` in order, at most `jobs` at a time, and returns each one's result. Calls
// `on_finished(k, result)` as command k ends (a command that cannot start is kFailed with the
// reason) and `on_tick()` after each round of waiting (at least once a second while children run).
std::vector<PointResult> RunChildren(
    const std::vector<ChildCommand>& commands, int jobs,
    const std::function<void(std::size_t, const PointResult&)>& on_finished,
    const std::function<void()>& on_tick);

}  // namespace pipette
