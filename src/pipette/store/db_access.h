// What the commands that read an experiment database share: opening one that must exist (read-only
// unless the command writes), refusing an output file that is the database, and turning --run
// values ("12", "3,4,9", "last", "last2") into run ids. Errors name the option (--db, --run,
// --out) the value came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/store/experiment_db.h"

namespace pipette {

// Whether `a` and `b` name one file: the same file now, or the same path once resolved (absolute,
// then weakly canonical: also for files not there yet).
bool SameFile(const std::string& a, const std::string& b);

// InvalidArgument when writing `out` (export --out, plot --out) would destroy the database `db`:
// `out` is the database or its -wal, -shm or -journal file, by identity (another path or a link to
// the same file) or by name (a file not yet there, such as a journal SQLite would take for a hot
// one).
Status CheckOutIsNotTheDatabase(const std::string& out, const std::string& db);

enum class DbAccess {
  kRead,   // ExperimentDb::OpenReadOnly: no write, no journal switch, no migration
  kWrite,  // ExperimentDb::Open: migrates (runs --repair)
};

// Opens `path`; NotFound naming --db when the file does not exist (reading never creates one).
Result<ExperimentDb> OpenExistingDb(const std::string& path, DbAccess access = DbAccess::kRead);

// Run ids from a comma-separated list of ids and "last" (the newest finished run) or "lastN" (the
// N newest finished runs, oldest first). Errors name --run, the value and the rule; ids must exist.
Result<std::vector<std::int64_t>> ResolveRuns(ExperimentDb& db, const std::string& text);

}  // namespace pipette
