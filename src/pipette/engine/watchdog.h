// Watchdog: bounds every wait of a real engine's rank (MPI or NCCL) on its peers.
//
// A rank marks the start and the end of each blocking wait (a receive, a collective, MPI_Init).
// When one wait lasts longer than the timeout, a background thread prints what the rank waited
// for, calls the expiry hook (if set: e.g. rank 0 marks its recorded run failed) and ends the
// process at once without MPI_Finalize; mpirun then ends every other rank of the job. This turns a
// failed or hung peer into an error within a bounded time on every rank.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace pipette {

class Watchdog {
 public:
  // `rank` names this process in the message; exit status 3 on expiry.
  Watchdog(int rank, double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Marks the start of a wait; `what` names it in the error.
  void Begin(std::string what);
  void End();
  void set_rank(int rank);
  // Called on the watchdog's thread, with the message, just before it ends the process. The hook
  // must not use what the waiting thread owns (open its own database connection, say).
  void set_on_expiry(std::function<void(const std::string& message)> hook);

 private:
  using Clock = std::chrono::steady_clock;
  void Loop();

  double timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  int rank_;
  bool stop_ = false;
  bool waiting_ = false;
  std::string what_;
  std::function<void(const std::string&)> on_expiry_;
  Clock::time_point since_;
  std::thread thread_;
};

// Runs `call` as a wait on peers watched by `dog`.
template <typename F>
void Watched(Watchdog& dog, std::string what, F&& call) {
  dog.Begin(std::move(what));
  call();
  dog.End();
}

// The exit status of a process the watchdog ends: a failure, not the user's input (the CLI's one
// rule, cli/exit_code.h: 1).
inline constexpr int kWatchdogExitCode = 1;

}  // namespace pipette
