// MergeDatabases: joins experiment databases (the shards of a sharded sweep, `pipette sweep SPEC
// --shard K/N`, or any databases of one schema) into one, `pipette db merge OUT IN...`
// (docs/trace_schema.md, "Merging databases").
//
// What is copied, input by input in the order given, run by run in id order:
//   - experiments are matched by name; a new name is added with its description and spec (an
//     experiment OUT already has keeps its own, as a sweep's EnsureExperiment does);
//   - calibrations get new ids (with their points), except one OUT already has (same engine, host
//     and created_at), which is reused;
//   - runs get new ids, and every row keyed by a run id (events, memory, metrics) follows its run
//   in
//     its original order; a run's config references to another run (`costs_from`) or calibration
//     (`prediction.calibration`) are rewritten to the new ids. Every copied run gets a provenance
//     row in `merged_runs` (the file it was first recorded in, its id there, when it was merged).
// What is not copied:
//   - a run OUT already holds: the same run identity, (host, pid, started_at, config), as when the
//     same shard is merged twice;
//   - a second finished (ok or oom) run of one sweep point, (experiment name, point_key): the first
//     wins, OUT's own before the inputs', then the inputs in the order given, each in id order. A
//     sweep treats a point's first finished run as its result (ExperimentDb::FindFinishedRun), so
//     merging never changes what a study already shows, and the result depends only on the order
//     of the inputs;
//   - `running` runs (a shard still running or killed: no rows, not a result). Failed runs are
//     copied: they are history and hold no point.
// Safety: OUT must not exist or be a pipette database (an older schema is migrated; a foreign file
// is refused, never written); every input is opened read-only and checked (a pipette database of
// exactly this pipette's schema version) before OUT is touched; all writes are one transaction on
// OUT, so an error at any point (a corrupt input, a constraint, a full disk) leaves OUT as it was
// (and an OUT that did not exist is removed). Inputs are never written. Not thread-safe (one call
// at a time).
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(MergeReport r, MergeDatabases("all.db", {"a.shard-0-of-2.db",
//                                                                      "a.shard-1-of-2.db"}));
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pipette/common/status.h"

namespace pipette {

// What one input contributed.
struct MergeSourceReport {
  std::string path;
  int runs = 0;                  // runs in the input
  int copied = 0;                // runs copied into OUT
  int duplicate_runs = 0;        // the same run identity already in OUT
  int duplicate_points = 0;      // a sweep point that already had a finished run
  int running = 0;               // `running` runs, not copied
  int experiments_added = 0;     // experiment names OUT did not have
  int calibrations_copied = 0;   // calibrations OUT did not have
  int fits_copied = 0;           // fits (pipette fit) OUT did not have
  std::int64_t rows_copied = 0;  // rows of the tables keyed by run or calibration id
};

struct MergeReport {
  bool created = false;  // OUT did not exist before
  std::vector<MergeSourceReport> sources;
};

// How far a merge is (pipette db merge's progress line): `report` is called after every run of the
// inputs, copied or not, with the runs done and the runs of all inputs.
struct MergeProgress {
  std::function<void(std::int64_t done, std::int64_t total)> report;
};

// Merges `inputs` into `out` (created when missing) as described above. Errors: InvalidArgument for
// no input or an input that is OUT itself; NotFound for a missing input; FailedPrecondition naming
// the file for an input of another schema version; IoError naming the file for an input that is
// not a pipette database or cannot be read, and for a failed write (OUT unchanged in every case).
Result<MergeReport> MergeDatabases(const std::string& out, const std::vector<std::string>& inputs,
                                   const MergeProgress& progress = {});

}  // namespace pipette
