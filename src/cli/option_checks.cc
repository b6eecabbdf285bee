#include "cli/option_checks.h"

#include <fmt/core.h>

#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

#include "cli/exit_code.h"
#include "pipette/common/printable.h"

namespace pipette::cli {

CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        if (!value.empty()) return "";
        return "must not be empty (leave the option out to get its default)";
      },
      "NOT EMPTY");
}

CLI::Validator UnsignedDecimal() {
  return CLI::Validator(
      [](const std::string& value) {
        std::uint64_t parsed = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, error] = std::from_chars(value.data(), end, parsed);
        if (!value.empty() && error == std::errc() && ptr == end) return std::string();
        return fmt::format("{}: must be a whole number in [0, {}], in decimal digits",
                           Printable(value), std::numeric_limits<std::uint64_t>::max());
      },
      "UINT64");
}

int ReportParseError(const CLI::App& app, const CLI::ParseError& error) {
  std::ostringstream err;
  const int code = app.exit(error, std::cout, err);
  std::cerr << PrintableLines(err.str());
  return code == 0 ? kExitOk : kExitBadInput;
}

}  // namespace pipette::cli
