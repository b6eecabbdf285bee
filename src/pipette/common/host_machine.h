// What this process can see of the machine it runs on: the cores it may use, the RAM, its name and
// its clock.
//
// The built-in `host` cluster (cluster/cluster_presets.h), `pipette calibrate` (which records the
// cores and the RAM in its calibration) and the mpirun command lines (cli/mpi_launcher.h) read the
// machine through these functions only; the experiment database stamps runs and calibrations with
// HostName and UtcNow. They read this process's state each call (no caching); safe from any
// thread.
#pragma once

#include <cstdint>
#include <string>

namespace pipette {

// The cores this process may run on (sched_getaffinity: a `taskset` or a container's cpuset
// narrows them), at least 1.
int UsableCores();

// MemTotal of /proc/meminfo in bytes; 0 when it cannot be read.
std::int64_t MemTotalBytes();

// This machine's host name ("unknown" when it cannot be read).
std::string HostName();

// The current UTC time as ISO 8601 with milliseconds ("2026-11-21T10:04:05.123Z").
std::string UtcNow();

}  // namespace pipette
