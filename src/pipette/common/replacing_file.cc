#include "pipette/common/replacing_file.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "pipette/common/printable.h"

namespace pipette {

ReplacingFile::ReplacingFile(std::string path) : path_(std::move(path)), write_path_(path_) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path_, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) return;
  const fs::path target(path_);
  const std::string name = fmt::format(".{}.partial-{}{}", target.stem().string(),
                                       static_cast<long>(getpid()), target.extension().string());
  write_path_ = (target.parent_path() / name).string();
  aside_ = true;
}

ReplacingFile::~ReplacingFile() {
  if (aside_ && !committed_) std::remove(write_path_.c_str());
}

Status ReplacingFile::Commit() {
  if (!aside_ || committed_) return Status::Ok();
  if (std::rename(write_path_.c_str(), path_.c_str()) != 0) {
    const int cause = errno;
    std::remove(write_path_.c_str());
    return Status::IoError(
        fmt::format("'{}': cannot replace the file: {}", Printable(path_), std::strerror(cause)));
  }
  committed_ = true;
  return Status::Ok();
}

}  // namespace pipette
