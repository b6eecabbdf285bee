#include "cli/option_checks.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

#include "cli/exit_code.h"
#include "pipette/common/printable.h"

namespace pipette::cli {
namespace {

// How a range check's message starts; CLI11 puts "--OPTION: " before it.
constexpr std::string_view kValuePrefix = "= ";

}  // namespace

CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        if (!value.empty()) return "";
        return "must not be empty (leave the option out to get its default)";
      },
      "NOT EMPTY");
}

CLI::Validator OutputPath() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        // "= 'VALUE': RULE": ReportParseError joins it to CLI11's "--OPTION: ".
        auto refuse = [&](std::string_view rule) {
          return fmt::format("{}'{}': {}", kValuePrefix, value, rule);
        };
        if (value.empty()) return refuse("must name a file (leave the option out for its default)");
        struct stat st {};
        if (stat(value.c_str(), &st) != 0) return std::string();  // a new file
        if (S_ISDIR(st.st_mode)) return refuse("must name a file, not a directory");
        if (S_ISSOCK(st.st_mode)) return refuse("must name a file, not a socket");
        if (!S_ISFIFO(st.st_mode)) return std::string();
        // The probe stays open until the process ends: closing it would be the end of the stream
        // for a reader that has no other writer (`cat FIFO` would exit before the command writes).
        if (open(value.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC) >= 0) return std::string();
        if (errno != ENXIO) return std::string();  // the write says why it cannot
        return refuse("is a FIFO that no process reads: writing would wait until one opens it");
      },
      "FILE");
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

CLI::Validator InRange(std::int64_t lo, std::int64_t hi, std::string why) {
  const std::string rule = hi == std::numeric_limits<std::int64_t>::max()
                               ? fmt::format("must be at least {}", lo)
                               : fmt::format("must be in [{}, {}]", lo, hi);
  return CLI::Validator(
      [lo, hi, rule, why = std::move(why)](const std::string& value) {
        std::int64_t parsed = 0;
        if (!CLI::detail::lexical_cast(value, parsed) || (parsed >= lo && parsed <= hi)) {
          return std::string();
        }
        // "= VALUE: RULE": ReportParseError joins it to CLI11's "--OPTION: " as "--OPTION = ".
        return fmt::format("{}{}: {}{}", kValuePrefix, parsed, rule,
                           why.empty() ? "" : " (" + why + ")");
      },
      hi == std::numeric_limits<std::int64_t>::max() ? fmt::format("at least {}", lo)
                                                     : fmt::format("in [{}, {}]", lo, hi));
}

int ReportParseError(const CLI::App& app, const CLI::ParseError& error, std::string_view command) {
  std::ostringstream err;
  const int code = app.exit(error, std::cout, err);
  if (code == 0) return kExitOk;
  std::string name(command);
  // pipette's subcommand, when the parser got as far as choosing one.
  for (const CLI::App* sub : app.get_subcommands()) name = sub->get_name();
  std::string text = err.str();
  if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr) {
    // A range check's "--OPTION: = VALUE: rule" reads "--OPTION = VALUE: rule".
    if (const std::size_t at = text.find(fmt::format(": {}", kValuePrefix));
        at != std::string::npos) {
      text.replace(at, 2 + kValuePrefix.size(), " = ");
    }
  }
  std::cerr << (name.empty() ? "pipette: " : fmt::format("pipette {}: ", name))
            << PrintableLines(text);
  return kExitBadInput;
}

}  // namespace pipette::cli
