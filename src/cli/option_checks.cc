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

int ReportParseError(const CLI::App& app, const CLI::ParseError& error, std::string_view command) {
  std::ostringstream err;
  const int code = app.exit(error, std::cout, err);
  if (code == 0) return kExitOk;
  std::string name(command);
  // pipette's subcommand, when the parser got as far as choosing one.
  for (const CLI::App* sub : app.get_subcommands()) name = sub->get_name();
  std::cerr << (name.empty() ? "pipette: " : fmt::format("pipette {}: ", name))
            << PrintableLines(err.str());
  return kExitBadInput;
}

}  // namespace pipette::cli
