// Checks on option values that CLI11 runs while parsing, shared by every command (pipette and
// pipette-train), and the one place a parse error is printed. CLI11 reports a failed check as
// "--OPTION: <what the check returned>" and the command exits 2 (cli/exit_code.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string_view>

namespace pipette::cli {

// Refuses an empty value: `--times ''` (an unset shell variable) names nothing, and leaving the
// option out is how its default is asked for.
CLI::Validator NonEmpty();

// Accepts only a whole number in [0, 2^64 - 1] written in decimal digits: CLI11 itself reads "-1"
// into an unsigned option as 2^64 - 1 and "0x10" as 16.
CLI::Validator UnsignedDecimal();

// Prints what CLI11 says about `error` (the help text on standard output; an error, with every
// control byte of it escaped, on standard error, after "pipette COMMAND: " like every other error)
// and returns the exit code: 0 for --help and --version, kExitBadInput for a parse error. COMMAND
// is the subcommand the parser chose, else `command` (pipette-train: "train").
int ReportParseError(const CLI::App& app, const CLI::ParseError& error,
                     std::string_view command = "");

}  // namespace pipette::cli
