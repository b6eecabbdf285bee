// A progress line for long work on a terminal (issue 33): one line on standard error redrawn in
// place, "pipette simulate: 42% (1.2 M of 2.9 M instructions, 0.43 s simulated), 12 s, about 16 s
// left", cleared when the work ends, so the command's own output is what stays on screen. Drawn
// only where a person watches: standard error is a terminal (or PIPETTE_PROGRESS=1 forces it) and
// the command was not given --quiet; PIPETTE_PROGRESS=0 turns it off. A rank that mpirun started
// may draw it on its standard output when mpirun's is a terminal (LauncherOutputIsTerminal), in
// order with its other output. Writing never fails the work: a stream that fails ends the line.
// Nothing is drawn for work that ends within `after` seconds, and the line is redrawn at most every
// `interval` seconds, so a fast loop may report as often as it likes. Used from one thread.
//
// Example:
//   ProgressLine line("pipette db merge", stderr, ProgressWanted(quiet));
//   for (k...) line.Update(k, n, fmt::format("{} of {} runs", k, n));
//   line.End();
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

namespace pipette {

// Whether a command shows progress lines: not `quiet`, and PIPETTE_PROGRESS=1, or standard error
// is a terminal and PIPETTE_PROGRESS is not 0.
bool ProgressWanted(bool quiet);

// Whether this process's parent is Open MPI's mpirun (mpiexec, orterun, prterun) and mpirun's
// standard output is a terminal, this process's own standard output being the pseudo-terminal
// mpirun reads it through.
bool LauncherOutputIsTerminal();

// "about 1 min 20 s left", "about 8 s left", "less than a second left", or "" while nothing is
// done (no rate yet) or when everything is: the time left at the rate so far,
// elapsed x (total - done) / done.
std::string TimeLeft(double elapsed_s, double done, double total);

// "8 s", "1 min 20 s", "2 h 05 min".
std::string Duration(double seconds);

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  // `label` opens the line (the command); `out` is where it is drawn (standard error), only if
  // `enabled`; the time is counted from `start`. The environment variable PIPETTE_PROGRESS_AFTER
  // (seconds, >= 0) overrides `after_s`.
  ProgressLine(std::string label, std::FILE* out, bool enabled, double after_s = 2.0,
               double interval_s = 0.25, Clock::time_point start = Clock::now());
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { End(); }

  // `done` of `total` units (total <= 0: unknown, no percentage or estimate), `detail` what they
  // are ("3 of 8 steps"). Draws if the line is due.
  void Update(double done, double total, std::string_view detail) {
    Update(done, total, detail, Clock::now());
  }
  void Update(double done, double total, std::string_view detail, Clock::time_point now);
  // Clears the line if it was drawn (the cursor back at the start of an empty line).
  void End();

  // The text of the line at `elapsed_s` (no escape codes), cut to `width` columns (0: uncut).
  std::string Text(double done, double total, std::string_view detail, double elapsed_s,
                   int width) const;
  bool drawn() const { return drawn_; }

 private:
  std::string label_;
  std::FILE* out_;
  bool enabled_;
  double after_s_;
  double interval_s_;
  Clock::time_point start_;
  Clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace pipette
