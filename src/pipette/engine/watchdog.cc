#include "pipette/engine/watchdog.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace pipette {

Watchdog::Watchdog(int rank, double timeout_s) : timeout_(timeout_s), rank_(rank) {
  thread_ = std::thread([this] { Loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::Begin(std::string what) {
  std::lock_guard lock(mutex_);
  what_ = std::move(what);
  since_ = Clock::now();
  waiting_ = true;
}

void Watchdog::End() {
  std::lock_guard lock(mutex_);
  waiting_ = false;
}

void Watchdog::set_rank(int rank) {
  std::lock_guard lock(mutex_);
  rank_ = rank;
}

void Watchdog::set_on_expiry(std::function<void(const std::string&)> hook) {
  std::lock_guard lock(mutex_);
  on_expiry_ = std::move(hook);
}

void Watchdog::Loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(100));
    if (!waiting_) continue;
    const double waited = std::chrono::duration<double>(Clock::now() - since_).count();
    if (waited > timeout_) {
      char message[512];
      std::snprintf(message, sizeof(message),
                    "rank %d waited %.1f s for %s (--peer-timeout %g s); a peer failed or hangs, "
                    "ending the run",
                    rank_, waited, what_.c_str(), timeout_);
      std::fprintf(stderr, "pipette train: %s\n", message);
      std::fflush(stderr);
      if (on_expiry_) on_expiry_(message);
      std::_Exit(kWatchdogExitCode);
    }
  }
}

}  // namespace pipette
