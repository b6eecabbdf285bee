// Exit codes of every pipette command and child process, and the one rule that turns a Status
// into one (cli/exit_code.h prints the message; a sweep reads its children's codes with it).
//
//   0  kExitOk        the command did what it was asked.
//   2  kExitBadInput  the user's input is at fault and fixing it fixes the run: a bad option value
//                     or configuration key (InvalidArgument), a named thing that does not exist
//                     (NotFound: a schedule, a model, a --db to read), a well-formed input that
//                     cannot be processed (FailedPrecondition: a deadlocking schedule, a database
//                     of a newer schema). A sweep files such a point as invalid, not failed.
//   1  kExitFailure   everything else: reading or writing a file failed (IoError: a database that
//                     cannot be opened or written, gnuplot failing), a bug (Internal), a crash.
//                     Running the same command again cannot be expected to succeed either, but the
//                     command line is not what is wrong.
#pragma once

#include "pipette/common/status.h"

namespace pipette {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Returns the exit code of a command that ends with `status` (kExitOk when it is OK).
int ExitCodeOf(const Status& status);

}  // namespace pipette
