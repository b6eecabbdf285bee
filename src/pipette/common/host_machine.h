// What this process can see of the machine it runs on: the cores it may use and the RAM.
//
// The built-in `host` cluster (cluster/cluster_presets.h), `pipette calibrate` (which records both
// in its calibration) and the mpirun command lines (cli/mpi_launcher.h) read the machine through
// these two functions only. They read this process's state each call (no caching); safe from any
// thread.
#pragma once

#include <cstdint>

namespace pipette {

// The cores this process may run on (sched_getaffinity: a `taskset` or a container's cpuset
// narrows them), at least 1.
int UsableCores();

// MemTotal of /proc/meminfo in bytes; 0 when it cannot be read.
std::int64_t MemTotalBytes();

}  // namespace pipette
