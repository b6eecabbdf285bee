// ReplacingFile: an output file a command writes (an exported trace, a figure, a cluster file)
// written aside and moved over its path only once complete, so that a failed write (a full disk,
// `ulimit -f`, gnuplot failing half-way) leaves whatever was at the path before, or nothing, never
// a truncated file a later step would read as whole. The replaced file's permission bits carry
// over (not its owner or other hard links: a new file takes the path). Written in place instead:
// paths that exist and are not regular files (a FIFO a reader waits on, a device, a symbolic link
// such as /dev/stdout: written through, as before), paths in a directory this process cannot
// write to, and names too long to extend. Not crash-proof against power loss (no fsync).
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
  // Chooses where to write: "<dir>/.<stem>.partial-<pid><extension>" beside `path` for a regular
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
  int mode_ = -1;  // the replaced file's permission bits; -1: a new file
  bool aside_ = false;
  bool committed_ = false;
};

}  // namespace pipette
