#include "cli/exit_code.h"

#include <fmt/core.h>

#include "pipette/common/printable.h"

namespace pipette::cli {

int ReportError(std::string_view command, const Status& status) {
  fmt::print(stderr, "pipette {}: {}\n", command, PrintableLines(status.message()));
  return ExitCodeOf(status);
}

}  // namespace pipette::cli
