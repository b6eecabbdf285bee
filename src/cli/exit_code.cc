#include "cli/exit_code.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "pipette/common/printable.h"

namespace pipette::cli {

int ReportError(std::string_view command, const Status& status) {
  fmt::print(stderr, "pipette {}: {}\n", command, PrintableLines(status.message()));
  return ExitCodeOf(status);
}

int FinishOutput(std::string_view command, int code) {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int cause = errno;
  // A command that failed has said why; a failed write is news only after a success.
  if (code != kExitOk || (flushed && !std::ferror(stdout) && std::cout.good())) return code;
  fmt::print(stderr, "pipette{}{}: cannot write standard output: {}\n", command.empty() ? "" : " ",
             command, cause != 0 ? std::strerror(cause) : "an earlier write failed");
  return kExitFailure;
}

void IgnoreFileSizeSignal() { std::signal(SIGXFSZ, SIG_IGN); }

void BufferStandardOutput() {
  // glibc ignores the size when it allocates the buffer itself (it takes the device's block size).
  static char buffer[std::size_t{64} << 10];
  if (isatty(fileno(stdout)) == 0) std::setvbuf(stdout, buffer, _IOFBF, sizeof(buffer));
}

}  // namespace pipette::cli
