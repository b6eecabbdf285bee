// The parts of `pipette sweep` (sweep_command.cc runs the points and then the follow-ups,
// study/sweep_followups.h; sweep_followups.cc lists a dry run). Called on the command's thread.
#pragma once

#include <string>
#include <vector>

#include "pipette/study/sweep_spec.h"

namespace pipette::cli {

struct SweepOptions {
  std::string spec;
  std::string db = "pipette.db";
  int jobs = 1;
  bool dry_run = false;
  std::string shard;          // "K/N" or "auto"; empty: every point (study/sweep_shard.h)
  bool figures_only = false;  // run no point; draw the figures from the database
  bool quiet = false;         // no progress line, no line per point that ran
};

// --dry-run: the points, which are done (reading never creates the database) and the figures.
int DryRun(const SweepSpec& spec, const SweepOptions& o, const std::vector<SweepPoint>& points);

}  // namespace pipette::cli
