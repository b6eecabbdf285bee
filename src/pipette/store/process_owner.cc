#include "pipette/store/process_owner.h"

#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pipette {
namespace {

struct ProcStat {
  char state = '?';
  unsigned long long start_ticks = 0;  // since boot
};

// Fields 3 (state) and 22 (starttime) of /proc/PID/stat; false when there is no such process.
bool ReadProcStat(std::int64_t pid, ProcStat& out) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return false;
  const std::size_t paren = line.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return false;
  std::istringstream fields(line.substr(paren + 1));
  std::vector<std::string> rest;  // fields 3, 4, ...
  for (std::string f; fields >> f && rest.size() < 20;) rest.push_back(f);
  if (rest.size() < 20) return false;
  out.state = rest[0].empty() ? '?' : rest[0][0];
  out.start_ticks = std::strtoull(rest[19].c_str(), nullptr, 10);
  return true;
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// Seconds since the epoch at boot (the btime line of /proc/stat), or -1.
long long BootTime() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      long long t = -1;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

// "2026-11-21T10:04:05.123Z" as seconds since the epoch, or -1.
double ParseUtc(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6) {
    return -1;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

// Whether the live process `stat` started after the run did (its pid was reused): its start time
// (boot time + ticks, good to a second) is later than started_at by more than that second.
bool StartedAfter(const ProcStat& stat, const std::string& started_at) {
  const long long boot = BootTime();
  const double run_start = ParseUtc(started_at);
  const long ticks = sysconf(_SC_CLK_TCK);
  if (boot < 0 || run_start < 0 || ticks <= 0) return false;  // cannot tell: alive
  const double process_start = static_cast<double>(boot) + double(stat.start_ticks) / ticks;
  return process_start > run_start + 1.5;
}

// "BOOT_ID:STARTTIME" of the process `stat` describes, or "" without a boot id.
std::string StartIdOf(const ProcStat& stat) {
  const std::string boot = BootId();
  return boot.empty() ? std::string() : fmt::format("{}:{}", boot, stat.start_ticks);
}

}  // namespace

std::string ProcessStartId(std::int64_t pid) {
  ProcStat stat;
  if (pid <= 0 || !ReadProcStat(pid, stat)) return "";
  return StartIdOf(stat);
}

OwnerState CheckOwner(const OwnerFacts& owner, const std::string& this_host) {
  if (owner.host != this_host) return OwnerState::kElsewhere;
  if (owner.pid <= 0) return OwnerState::kDead;
  ProcStat stat;
  if (!ReadProcStat(owner.pid, stat)) {
    // No /proc entry: gone, or no /proc at all (then kill(pid, 0) is all there is).
    if (std::ifstream("/proc/self/stat").good()) return OwnerState::kDead;
    const bool exists = kill(static_cast<pid_t>(owner.pid), 0) == 0 || errno == EPERM;
    return exists ? OwnerState::kAlive : OwnerState::kDead;
  }
  if (stat.state == 'Z' || stat.state == 'X') return OwnerState::kDead;
  if (!owner.start.empty()) {
    return StartIdOf(stat) == owner.start ? OwnerState::kAlive : OwnerState::kDead;
  }
  return StartedAfter(stat, owner.started_at) ? OwnerState::kDead : OwnerState::kAlive;
}

}  // namespace pipette
