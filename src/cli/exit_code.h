// How a pipette command reports the error it ends with: the message on standard error and the exit
// code of the one rule (common/exit_code.h: 0 ok, 2 the user's input, 1 everything else).
#pragma once

#include <string_view>

#include "pipette/common/exit_code.h"
#include "pipette/common/status.h"

namespace pipette::cli {

// Prints "pipette COMMAND: <message>" on standard error, every control byte of the message but its
// line breaks escaped (PrintableLines, common/printable.h); returns ExitCodeOf(status).
// REQUIRES: !status.ok().
int ReportError(std::string_view command, const Status& status);

// The exit code once a command has printed everything: `code`, unless the command succeeded but
// standard output could not be written (a full disk, /dev/full): then an I/O failure that says so
// on standard error ("pipette COMMAND: cannot write standard output: <cause>"), kExitFailure. A
// command that failed has reported its own error. Call once, as the command returns (it flushes
// standard output).
int FinishOutput(std::string_view command, int code);

// Ignores SIGXFSZ, so a write past `ulimit -f` fails with EFBIG and the command says so (exit 1,
// a run ends `failed`) instead of dying silently with the run left `running`. Call first in main.
void IgnoreFileSizeSignal();

// Buffers standard output in 64 KiB when it is not a terminal, so that a command's output up to
// that size is written once, by FinishOutput's flush, which then knows why a write failed (a
// failure in an earlier flush leaves only the stream's error flag: "an earlier write failed").
// Call first in main, before anything is printed.
void BufferStandardOutput();

}  // namespace pipette::cli
