#include "pipette/common/bounded_file.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "pipette/common/printable.h"

namespace pipette {
namespace {

// "a directory", "a socket", ...: what a path that is not a regular file is instead.
std::string_view KindOf(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a directory";
    case std::filesystem::file_type::block:
    case std::filesystem::file_type::character:
      return "a device";
    case std::filesystem::file_type::fifo:
      return "a pipe";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "not a plain file";
  }
}

}  // namespace

Result<std::string> ReadFileBounded(const std::string& path, std::uintmax_t max_bytes,
                                    std::string_view what, MissingFile missing) {
  const auto error = [&](std::string_view message) {
    return fmt::format("{} '{}': {}", what, Printable(path), message);
  };
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) {
    return Status::NotFound(error(missing == MissingFile::kNoSuchFile
                                      ? "no such file"
                                      : "not a regular file (or it does not exist)"));
  }
  if (ec) return Status::IoError(error(ec.message()));
  if (status.type() != std::filesystem::file_type::regular) {
    return Status::InvalidArgument(
        error(fmt::format("not a regular file ({})", KindOf(status.type()))));
  }
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::IoError(error(ec.message()));
  if (size > max_bytes) {
    return Status::InvalidArgument(
        error(fmt::format("{} bytes, more than the limit of {}", size, max_bytes)));
  }

  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::IoError(error(fmt::format("cannot be opened ({})", std::strerror(errno))));
  std::string text;
  text.reserve(size);
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {  // it grew since its size was taken
      return Status::InvalidArgument(
          error(fmt::format("grew past the limit of {} bytes while being read", max_bytes)));
    }
  }
  if (in.bad()) return Status::IoError(error("cannot be read"));
  return text;
}

}  // namespace pipette
