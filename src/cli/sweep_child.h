// ChildProcess: this pipette binary (/proc/self/exe) run as a child process with its standard
// output and error captured through pipes and its standard input from /dev/null. `pipette sweep`
// runs each point and each figure this way, because SimGrid allows one simulation per process.
//
// The object owns the process and both pipes: destroying one whose child has not been waited for
// kills it (SIGKILL) and reaps it, so no zombie outlives its owner. The pipes are close-on-exec, so
// a child never holds a sibling's pipe open. Move-only; one thread at a time.
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Start({"simulate", "-m8"}));
//   // poll() out_fd() and err_fd(), ReadFrom() the ready ones until output_closed(), then:
//   ChildExit exit = child.Wait();
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "pipette/common/status.h"

namespace pipette::cli {

// How a child ended.
struct ChildExit {
  int code = -1;                 // the exit status, or -1 when killed by a signal
  int signal = 0;                // the signal that killed it, 0 when it exited
  std::string Describe() const;  // "exit 1", "killed by signal 9 (Killed)"
};

class ChildProcess {
 public:
  // Starts `/proc/self/exe args...`. IoError when the pipes or the process cannot be created.
  static Result<ChildProcess> Start(const std::vector<std::string>& args);
  // Starts the child, reads both pipes to the end and waits for it.
  static Result<ChildProcess> Run(const std::vector<std::string>& args);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // The read ends still open (-1 once at end of file), for poll().
  int out_fd() const { return out_fd_; }
  int err_fd() const { return err_fd_; }
  // Reads once from `fd` (out_fd() or err_fd(); call it when poll() says it is ready, or it
  // blocks) and closes it at end of file. Ignores other descriptors.
  void ReadFrom(int fd);
  // Both pipes are at end of file.
  bool output_closed() const { return out_fd_ < 0 && err_fd_ < 0; }
  // Waits for the child to exit (once; later calls return the same). REQUIRES: output_closed().
  ChildExit Wait();

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  ChildProcess() = default;
  void Release();

  pid_t pid_ = -1;  // -1 once waited for
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  ChildExit exit_;
};

}  // namespace pipette::cli
