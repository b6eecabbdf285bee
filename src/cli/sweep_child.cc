#include "cli/sweep_child.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

extern char** environ;

namespace pipette::cli {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// posix_spawn_file_actions_t with its destroy.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

}  // namespace

std::string ChildExit::Describe() const {
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit {}", code);
}

Result<ChildProcess> ChildProcess::Start(const std::vector<std::string>& args) {
  std::array<int, 2> out{-1, -1}, err{-1, -1};
  if (::pipe2(out.data(), O_CLOEXEC) != 0 || ::pipe2(err.data(), O_CLOEXEC) != 0) {
    const int error = errno;
    for (int* fd : {&out[0], &out[1], &err[0], &err[1]}) CloseFd(*fd);
    return Status::IoError(fmt::format("cannot create a pipe: {}", std::strerror(error)));
  }
  FileActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(actions.get(), out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(actions.get(), err[1], STDERR_FILENO);
  std::vector<std::string> strings = {"pipette"};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  ChildProcess child;
  const int error =
      posix_spawn(&child.pid_, "/proc/self/exe", actions.get(), nullptr, argv.data(), environ);
  CloseFd(out[1]);
  CloseFd(err[1]);
  child.out_fd_ = out[0];
  child.err_fd_ = err[0];
  if (error != 0) {
    child.pid_ = -1;
    return Status::IoError(fmt::format("cannot start /proc/self/exe {}: {}",
                                       args.empty() ? "" : args.front(), std::strerror(error)));
  }
  return child;
}

Result<ChildProcess> ChildProcess::Run(const std::vector<std::string>& args) {
  PIPETTE_ASSIGN_OR_RETURN(ChildProcess child, Start(args));
  // Reading one pipe to its end first would deadlock on a child that fills the other: poll both.
  while (!child.output_closed()) {
    std::array<pollfd, 2> fds{pollfd{child.out_fd_, POLLIN, 0}, pollfd{child.err_fd_, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      return Status::IoError(fmt::format("poll: {}", std::strerror(errno)));
    }
    for (const pollfd& p : fds) {
      if (p.fd >= 0 && p.revents != 0) child.ReadFrom(p.fd);
    }
  }
  child.Wait();
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      exit_(other.exit_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
    out_ = std::move(other.out_);
    err_ = std::move(other.err_);
    exit_ = other.exit_;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Release(); }

void ChildProcess::Release() {
  CloseFd(out_fd_);
  CloseFd(err_fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

void ChildProcess::ReadFrom(int fd) {
  if (fd < 0 || (fd != out_fd_ && fd != err_fd_)) return;
  std::string& text = fd == out_fd_ ? out_ : err_;
  std::array<char, 65536> buffer;
  ssize_t n;
  do {
    n = ::read(fd, buffer.data(), buffer.size());
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    text.append(buffer.data(), static_cast<std::size_t>(n));
    return;
  }
  CloseFd(fd == out_fd_ ? out_fd_ : err_fd_);  // end of file, or an error reading: done with it
}

ChildExit ChildProcess::Wait() {
  if (pid_ <= 0) return exit_;
  int status = 0;
  pid_t result;
  do {
    result = ::waitpid(pid_, &status, 0);
  } while (result < 0 && errno == EINTR);
  pid_ = -1;
  if (result < 0) {
    exit_ = {-1, 0};
  } else if (WIFEXITED(status)) {
    exit_ = {WEXITSTATUS(status), 0};
  } else if (WIFSIGNALED(status)) {
    exit_ = {-1, WTERMSIG(status)};
  }
  return exit_;
}

}  // namespace pipette::cli
