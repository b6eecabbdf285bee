#include "cli/exit_code.h"

#include <fmt/core.h>

#include "pipette/common/printable.h"

namespace pipette::cli {

int ExitCodeOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
      return kExitBadInput;
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      return kExitFailure;
  }
  return kExitFailure;
}

int ReportError(std::string_view command, const Status& status) {
  fmt::print(stderr, "pipette {}: {}\n", command, PrintableLines(status.message()));
  return ExitCodeOf(status);
}

}  // namespace pipette::cli
