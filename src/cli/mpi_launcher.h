// How pipette starts its MPI programs: the binaries built beside `pipette` (pipette-train,
// pipette-calibrate; SimGrid's SMPI exports MPI symbols of its own, so MPI never lives in the
// `pipette` binary), and the `mpirun` command line that runs one of them on N processes of this
// machine. `pipette calibrate` launches itself this way when no launcher started it, and
// `pipette sweep` runs each point of a `command = "train"` study so. Pure functions except
// SiblingBinary(), which reads this process's state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/host_machine.h"

namespace pipette::cli {

// The path of `name` (e.g. "pipette-train") in the directory of this process's own binary.
std::string SiblingBinary(std::string_view name);

// UsableCores() (the cores this process may run on) lives in common/host_machine.h, where the
// cluster layer's `host` preset reads it too; it is visible here as pipette::UsableCores.

// The mpirun this build found (CMake's MPIEXEC_EXECUTABLE), else "mpirun" from PATH.
std::string MpirunProgram();

// The argument vector that runs `binary args...` on `np` processes with Open MPI's mpirun:
// `mpirun -np NP [--oversubscribe] [--allow-run-as-root] BINARY ARGS...`, with --oversubscribe when
// np exceeds `cores` (Open MPI refuses more processes than slots otherwise) and
// --allow-run-as-root when `as_root` (Open MPI refuses root otherwise). argv[0] is "mpirun".
std::vector<std::string> MpirunArguments(int np, int cores, bool as_root, const std::string& binary,
                                         const std::vector<std::string>& args);

// Replaces this process with `program argv[1..]` (execv); returns only when that failed, after
// printing "pipette COMMAND: cannot run PROGRAM: why" on standard error, with kExitFailure.
int ExecProgram(std::string_view command, const std::string& program,
                const std::vector<std::string>& argv);

}  // namespace pipette::cli
