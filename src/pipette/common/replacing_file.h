// ReplacingFile: an output file a command writes (an exported trace, a figure, a cluster file)
// written aside and moved over its path only once complete, so that a failed write (a full disk,
// `ulimit -f`, gnuplot failing half-way) leaves whatever was at the path before, or nothing, never
// a truncated file a later step would read as whole. Paths that exist and are not regular files
// (a FIFO a reader waits on, /dev/stdout) are written in place: there is nothing to replace.
// Not thread-safe; one per output.
//
// Example:
//   ReplacingFile file(path);
//   std::ofstream out(file.write_path());  // ... write, check ...
//   PIPETTE_RETURN_IF_ERROR(file.Commit());  // without it, the destructor removes the aside file
#pragma once

#include <string>

#include "pipette/common/status.h"

namespace pipette {

class ReplacingFile {
 public:
  // Chooses where to write: "<dir>/.<name>.partial-<pid><extension>" beside `path` for a regular
  // file or a new path (the extension kept, for writers that choose a format by it), else `path`.
  explicit ReplacingFile(std::string path);
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;
  // Removes the aside file unless Commit() moved it.
  ~ReplacingFile();

  const std::string& path() const { return path_; }
  const std::string& write_path() const { return write_path_; }

  // Moves the written file over path() (an atomic rename in one directory). IoError "'<path>':
  // cannot replace the file: <reason>" when the rename fails (the aside file is removed).
  Status Commit();

 private:
  std::string path_;
  std::string write_path_;
  bool aside_ = false;
  bool committed_ = false;
};

}  // namespace pipette
