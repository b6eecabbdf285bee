#include "pipette/common/replacing_file.h"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "pipette/common/printable.h"

namespace pipette {
namespace {

// Room left in a file name for ".partial-<pid>" and a dot (NAME_MAX is 255 on Linux file systems).
constexpr std::size_t kMaxReplacedNameBytes = 200;

}  // namespace

ReplacingFile::ReplacingFile(std::string path) : path_(std::move(path)), write_path_(path_) {
  namespace fs = std::filesystem;
  std::error_code error;
  // The link itself, not what it names: a symbolic link (/dev/stdout, a link the user made) is
  // written through, as are FIFOs and devices.
  const fs::file_status status = fs::symlink_status(path_, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) return;
  const fs::path target(path_);
  if (target.filename().string().size() > kMaxReplacedNameBytes) return;
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  // A writable file in a directory this process cannot write to is still written, in place.
  if (access(dir.c_str(), W_OK) != 0) return;
  struct stat existing {};
  if (stat(path_.c_str(), &existing) == 0) mode_ = existing.st_mode & 07777;
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
  // The replaced file's permissions carry over (a 0600 file stays private).
  if ((mode_ >= 0 && chmod(write_path_.c_str(), static_cast<mode_t>(mode_)) != 0) ||
      std::rename(write_path_.c_str(), path_.c_str()) != 0) {
    const int cause = errno;
    std::remove(write_path_.c_str());
    return Status::IoError(
        fmt::format("'{}': cannot replace the file: {}", Printable(path_), std::strerror(cause)));
  }
  committed_ = true;
  return Status::Ok();
}

}  // namespace pipette
