// Checks on option values that CLI11 runs while parsing, shared by every command (pipette and
// pipette-train), and the one place a parse error is printed. CLI11 reports a failed check as
// "--OPTION: <what the check returned>" and the command exits 2 (cli/exit_code.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace pipette::cli {

// Refuses an empty value: `--times ''` (an unset shell variable) names nothing, and leaving the
// option out is how its default is asked for.
CLI::Validator NonEmpty();

// Refuses an output path that names nothing or would block: empty (an unset variable; leave the
// option out for its default), a directory or a socket, and a FIFO that no process reads (opening
// it to write would wait forever). A FIFO with a reader (a shell's process substitution) and a
// device such as /dev/stdout are taken.
CLI::Validator OutputPath();

// Accepts only a whole number in [0, 2^64 - 1] written in decimal digits: CLI11 itself reads "-1"
// into an unsigned option as 2^64 - 1 and "0x10" as 16.
CLI::Validator UnsignedDecimal();

// Puts before the checks of every option of `app` and its subcommands that takes a value the one
// rule for values: not empty (an unset variable; leaving the option out is how its default is
// asked for), and a number (CLI11 types INT, UINT, FLOAT) written in decimal ("0x10", "010",
// "1e400", "nan" and values beyond 64 bits are refused), quoting the text given: "--OPTION =
// 'TEXT': RULE". Call once every option is added.
void RequireWellFormedValues(CLI::App& app);

// Accepts a whole number (as CLI11 reads it into an integer option) in [lo, hi]; refuses any other
// with the project's message, "--OPTION = VALUE: must be in [LO, HI] (WHY)" ("must be at least
// LO" when `hi` is the type's largest value; " (WHY)" only with a `why`). A value that is no
// whole number is left to CLI11's own conversion error.
CLI::Validator InRange(std::int64_t lo, std::int64_t hi, std::string why = "");
inline CLI::Validator AtLeast(std::int64_t lo, std::string why = "") {
  return InRange(lo, std::numeric_limits<std::int64_t>::max(), std::move(why));
}

// Prints what CLI11 says about `error` (the help text on standard output; an error, with every
// control byte of it escaped, on standard error, after "pipette COMMAND: " like every other error)
// and returns the exit code: 0 for --help and --version, kExitBadInput for a parse error. COMMAND
// is the subcommand the parser chose, else `command` (pipette-train: "train").
int ReportParseError(const CLI::App& app, const CLI::ParseError& error,
                     std::string_view command = "");

}  // namespace pipette::cli
