#include "pipette/store/db_access.h"

#include <fmt/core.h>

#include <charconv>
#include <filesystem>

#include "pipette/common/split.h"

namespace pipette {

// Whether `a` and `b` name one file: the same file now, or the same path once resolved.
bool SameFile(const std::string& a, const std::string& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error) && !error) return true;
  // Absolute first: weakly_canonical leaves a relative path of files that do not exist relative.
  const auto resolved = [&error](const std::string& path) {
    const std::filesystem::path absolute = std::filesystem::absolute(path, error);
    return error ? std::filesystem::path() : std::filesystem::weakly_canonical(absolute, error);
  };
  const std::filesystem::path ra = resolved(a);
  if (error) return false;
  const std::filesystem::path rb = resolved(b);
  return !error && ra == rb;
}

Status CheckOutIsNotTheDatabase(const std::string& out, const std::string& db) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    if (!SameFile(out, db + suffix)) continue;
    return Status::InvalidArgument(fmt::format(
        "--out = '{}': is the database{} (--db = '{}'); writing there would destroy it: choose "
        "another file",
        out, *suffix ? fmt::format("'s {} file", suffix + 1) : std::string(), db));
  }
  return Status::Ok();
}

Result<ExperimentDb> OpenExistingDb(const std::string& path, DbAccess access) {
  PIPETTE_RETURN_IF_ERROR(CheckDatabasePath(path));
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return Status::NotFound(fmt::format(
        "--db = '{}': no such database (pipette simulate records into pipette.db by default)",
        path));
  }
  return access == DbAccess::kRead ? ExperimentDb::OpenReadOnly(path) : ExperimentDb::Open(path);
}

Result<std::vector<std::int64_t>> ResolveRuns(ExperimentDb& db, const std::string& text) {
  PIPETTE_ASSIGN_OR_RETURN(std::vector<RunRecord> all, db.ListRuns());
  std::vector<std::int64_t> finished;
  for (const RunRecord& r : all) {
    if (r.status == kRunOk || r.status == kRunOom) finished.push_back(r.id);
  }
  std::vector<std::int64_t> ids;
  for (const std::string& item : SplitAt(text, ',')) {
    if (item.rfind("last", 0) == 0) {
      int n = 1;
      const std::string count = item.substr(4);
      if (!count.empty()) {
        auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
        if (ec != std::errc() || ptr != count.data() + count.size() || n < 1) {
          return Status::InvalidArgument(
              fmt::format("--run = '{}': '{}' must be last or lastN with N >= 1", text, item));
        }
      }
      if (static_cast<std::size_t>(n) > finished.size()) {
        return Status::NotFound(
            fmt::format("--run = '{}': the database has {} finished runs", text, finished.size()));
      }
      ids.insert(ids.end(), finished.end() - n, finished.end());
      continue;
    }
    std::int64_t id = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return Status::InvalidArgument(
          fmt::format("--run = '{}': '{}' is not a run id (ids, comma-separated, or last / lastN)",
                      text, item));
    }
    bool known = false;
    for (const RunRecord& r : all) known |= r.id == id;
    if (!known)
      return Status::NotFound(fmt::format("--run = '{}': no run {} in the database", text, id));
    ids.push_back(id);
  }
  return ids;
}

}  // namespace pipette
