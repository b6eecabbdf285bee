#include "cli/option_checks.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "cli/exit_code.h"
#include "pipette/common/printable.h"

namespace pipette::cli {
namespace {

// How a range check's message starts; CLI11 puts "--OPTION: " before it.
constexpr std::string_view kValuePrefix = "= ";

enum class NumberKind { kSigned, kUnsigned, kReal };

// What is wrong with `value` as a number of `kind` ("" when nothing): CLI11 alone reads '' as 0,
// "0x10" as 16, "1e400" as infinity, and saturates 2^63 to 2^63 - 1.
std::string NumberProblem(const std::string& value, NumberKind kind) {
  if (value.empty()) return "must be a number (leave the option out to get its default)";
  if (kind == NumberKind::kReal) {
    static const std::regex kDecimal(R"([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
    if (!std::regex_match(value, kDecimal)) {
      return "must be a number in decimal notation (such as 2, 0.5 or 1e-3)";
    }
    if (!std::isfinite(std::strtod(value.c_str(), nullptr))) return "must be a finite number";
    return "";
  }
  const char* end = value.data() + value.size();
  std::from_chars_result read{};
  if (kind == NumberKind::kUnsigned) {
    std::uint64_t parsed = 0;
    read = std::from_chars(value.data(), end, parsed);
  } else {
    std::int64_t parsed = 0;
    read = std::from_chars(value.data(), end, parsed);
  }
  const auto [stop, error] = read;
  if (error == std::errc::result_out_of_range && stop == end) {
    return kind == NumberKind::kUnsigned ? fmt::format("must be a whole number at most {}",
                                                       std::numeric_limits<std::uint64_t>::max())
                                         : fmt::format("must be a whole number in [{}, {}]",
                                                       std::numeric_limits<std::int64_t>::min(),
                                                       std::numeric_limits<std::int64_t>::max());
  }
  if (error != std::errc() || stop != end) {
    return kind == NumberKind::kUnsigned ? "must be a whole number in decimal digits"
                                         : "must be a whole number in decimal digits (and a sign)";
  }
  const std::string_view digits = std::string_view(value).substr(value[0] == '-' ? 1 : 0);
  if (digits.size() > 1 && digits[0] == '0') {  // CLI11 reads "010" as octal 8
    return "must be a whole number in decimal digits, without leading zeros";
  }
  return "";
}

// The kind of number an option of CLI11 type `type` ("INT", "UINT", "FLOAT", then ":" and its
// checks' descriptions) holds, if it holds one.
std::optional<NumberKind> NumberKindOf(const std::string& type) {
  const std::string base = type.substr(0, type.find(':'));
  if (base == "INT") return NumberKind::kSigned;
  if (base == "UINT") return NumberKind::kUnsigned;
  if (base == "FLOAT") return NumberKind::kReal;
  return std::nullopt;
}

}  // namespace

void RequireWellFormedValues(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size_max() < 1) continue;  // a flag
    const std::optional<NumberKind> kind = NumberKindOf(option->get_type_name());
    // transform() puts the check before the option's own (a range, a list of choices), so those
    // only ever see a well-formed value.
    option->transform(CLI::Validator(
        [kind](const std::string& value) -> std::string {
          const std::string problem =
              value.empty()
                  ? std::string("must not be empty (leave the option out to get its default)")
                  : (kind ? NumberProblem(value, *kind) : std::string());
          if (problem.empty()) return problem;
          // "= 'VALUE': RULE": ReportParseError joins it to CLI11's "--OPTION: ".
          return fmt::format("{}'{}': {}", kValuePrefix, value, problem);
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) RequireWellFormedValues(*sub);
}

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
        // "= VALUE: RULE": ReportParseError joins it to CLI11's "--OPTION: " as "--OPTION = ".
        if (const std::string problem = NumberProblem(value, NumberKind::kSigned);
            !problem.empty()) {
          return fmt::format("{}'{}': {}", kValuePrefix, value, problem);
        }
        std::int64_t parsed = 0;
        std::from_chars(value.data(), value.data() + value.size(), parsed);
        if (parsed >= lo && parsed <= hi) return std::string();
        return fmt::format("{}{}: {}{}", kValuePrefix, value, rule,
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
    // CLI11's own checks: "--OPTION: VALUE not in {a,b}" and "--OPTION: Value VALUE not in range
    // A to B" read "--OPTION = 'VALUE': must be one of {a,b}" and "... must be in [A, B]".
    static const std::regex kNotIn(R"((--?[\w-]+): (.*) not in (\{.*\}))");
    static const std::regex kNotInRange(R"((--?[\w-]+): Value (.*) not in range (\S+) to (\S+))");
    text = std::regex_replace(text, kNotInRange, "$1 = '$2': must be in [$3, $4]");
    text = std::regex_replace(text, kNotIn, "$1 = '$2': must be one of $3");
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
