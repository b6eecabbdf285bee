// Whether the process that owns a `running` run is still that run's process: the checks behind
// claiming a sweep point and `pipette runs --repair` (experiment_db.h).
//
// A run records its owner as (host, pid, start), where start is the owner's identity on this boot
// ("BOOT_ID:STARTTIME", /proc/sys/kernel/random/boot_id and field 22 of /proc/PID/stat). A pid that
// exists is not enough: a zombie (state Z or X) has ended, and a pid reused after a reboot or by a
// later process has another start. Runs recorded before the start was kept (empty start) fall back
// to comparing the process's start time with the run's started_at. Stateless functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace pipette {

// The identity of process `pid` on this boot, "BOOT_ID:STARTTIME"; empty when it does not exist
// or /proc cannot tell (not Linux).
std::string ProcessStartId(std::int64_t pid);

struct OwnerFacts {
  std::string host;        // the run's host
  std::int64_t pid = 0;    // the run's process
  std::string start;       // ProcessStartId(pid) when the run began; empty for older runs
  std::string started_at;  // the run's started_at (ISO 8601 UTC)
};

enum class OwnerState {
  kAlive,      // this host, and the pid is still the run's process
  kDead,       // this host, and the process ended (gone, zombie, or its pid reused)
  kElsewhere,  // another host: cannot be checked from here
};

// The state of the run's owner as seen from host `this_host`.
OwnerState CheckOwner(const OwnerFacts& owner, const std::string& this_host);

}  // namespace pipette
