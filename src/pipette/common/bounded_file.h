// ReadFileBounded: reads a whole file a user named (a model or cluster file, a sweep spec, a
// schedule CSV) and refuses one larger than a limit, so a wrong path (a log, a device) fails with a
// clear message instead of filling memory. Every message starts "<what> '<path>':".
// Stateless; safe from any thread.
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, 1 << 20, "cluster file"));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipette/common/status.h"

namespace pipette {

// How a path that does not exist is reported. Both are NotFound; the wordings differ because
// tests of existing formats pin them (cluster files and schedule CSVs say the second).
enum class MissingFile {
  kNoSuchFile,       // "<what> '<path>': no such file"
  kNotARegularFile,  // "<what> '<path>': not a regular file (or it does not exist)"
};

// Returns the contents of the file at `path`. Errors, each naming `what` and `path`:
//   NotFound         the path does not exist (worded as `missing` says);
//   InvalidArgument  it is not a regular file ("not a regular file (a directory)"), or it holds
//   more
//                    than `max_bytes` ("N bytes, more than the limit of M");
//   IoError          it exists but cannot be opened or read (the system's reason).
Result<std::string> ReadFileBounded(const std::string& path, std::uintmax_t max_bytes,
                                    std::string_view what,
                                    MissingFile missing = MissingFile::kNoSuchFile);

}  // namespace pipette
