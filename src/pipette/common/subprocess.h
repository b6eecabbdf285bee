// Subprocess: a program run as a child process from an argument vector (no shell), its standard
// input fed from a buffer or read from /dev/null, its standard output and error captured through
// pipes. `pipette sweep` runs its points and figures this way, and the plot layer runs gnuplot.
//
// The object owns the process and its pipes: destroying one whose child has not been waited for
// kills it (SIGKILL) and reaps it, so no zombie outlives its owner. The pipes are close-on-exec, so
// a child never holds a sibling's pipe open. A child that exits without reading all its input
// does not raise SIGPIPE in the parent: the rest of the input is dropped. Move-only; one thread
// at a time.
//
// Example:
//   // One child, to the end:
//   PIPETTE_ASSIGN_OR_RETURN(Subprocess gnuplot,
//                            Subprocess::Run("gnuplot", {"gnuplot", "/dev/stdin"}, script));
//   if (gnuplot.Wait().code != 0) return Status::IoError(gnuplot.err());
//   // Several at once: Start() each, poll() the PollFds() of all, Transfer() the ready ones until
//   // each is done(), then Wait() for it.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "pipette/common/status.h"

namespace pipette {

// How a child ended.
struct ExitStatus {
  int code = -1;                 // the exit status, or -1 when killed by a signal
  int signal = 0;                // the signal that killed it, 0 when it exited
  std::string Describe() const;  // "exit 1", "killed by signal 9 (Killed)"
};

class Subprocess {
 public:
  // Starts `program` (a path, or a name looked up in PATH) with the argument vector `argv`
  // (argv[0] included: the name the child sees). Its standard input is `input` through a pipe, or
  // /dev/null when there is none. IoError naming `program` when a pipe or the process cannot be
  // created (e.g. no such program).
  static Result<Subprocess> Start(const std::string& program, const std::vector<std::string>& argv,
                                  std::optional<std::string> input = std::nullopt);
  // Starts the child, writes its input and reads both outputs to the end, and waits for it.
  static Result<Subprocess> Run(const std::string& program, const std::vector<std::string>& argv,
                                std::optional<std::string> input = std::nullopt);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  // The pipes still open, each with the poll() event it waits for: the child's standard input
  // (POLLOUT) while input remains, its standard output and error (POLLIN) until end of file.
  std::vector<pollfd> PollFds() const;
  // Moves data through `fd`, one of PollFds()' descriptors that poll() reported ready: writes more
  // input, or reads once from an output; closes the pipe when it is done. Ignores other
  // descriptors.
  void Transfer(int fd);
  // Every pipe is closed: the input written (or refused by the child), both outputs at their end.
  bool done() const { return in_fd_ < 0 && out_fd_ < 0 && err_fd_ < 0; }
  // Waits for the child to exit (once; later calls return the same). REQUIRES: done().
  ExitStatus Wait();

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  Subprocess() = default;
  void Release();

  pid_t pid_ = -1;  // -1 once waited for
  int in_fd_ = -1;  // non-blocking
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string input_;
  std::size_t written_ = 0;  // bytes of input_ written so far
  std::string out_;
  std::string err_;
  ExitStatus exit_;
};

}  // namespace pipette
