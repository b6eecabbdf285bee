#include "pipette/common/subprocess.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

extern char** environ;

namespace pipette {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A pipe whose ends are closed on destruction unless taken.
struct Pipe {
  std::array<int, 2> fd{-1, -1};  // read end, write end
  ~Pipe() {
    CloseFd(fd[0]);
    CloseFd(fd[1]);
  }
  int Take(int end) { return std::exchange(fd[end], -1); }
};

Status OpenPipe(Pipe& pipe) {
  if (::pipe2(pipe.fd.data(), O_CLOEXEC) == 0) return Status::Ok();
  return Status::IoError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
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

// write() that never raises SIGPIPE: SIGPIPE is blocked in this thread around the call, and one
// it raised is consumed (unless one was already pending).
ssize_t WriteWithoutSigpipe(int fd, const char* data, std::size_t size) {
  sigset_t sigpipe, old, pending;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &sigpipe, &old);
  ssize_t n;
  do {
    n = ::write(fd, data, size);
  } while (n < 0 && errno == EINTR);
  const int error = errno;
  if (n < 0 && error == EPIPE && !was_pending) {
    const timespec now{0, 0};
    while (sigtimedwait(&sigpipe, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = error;
  return n;
}

}  // namespace

std::string ExitStatus::Describe() const {
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit {}", code);
}

Result<Subprocess> Subprocess::Start(const std::string& program,
                                     const std::vector<std::string>& argv,
                                     std::optional<std::string> input) {
  Pipe in, out, err;
  PIPETTE_RETURN_IF_ERROR(OpenPipe(out));
  PIPETTE_RETURN_IF_ERROR(OpenPipe(err));
  FileActions actions;
  if (input) {
    PIPETTE_RETURN_IF_ERROR(OpenPipe(in));
    posix_spawn_file_actions_adddup2(actions.get(), in.fd[0], STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(actions.get(), out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(actions.get(), err.fd[1], STDERR_FILENO);
  std::vector<std::string> strings = argv;
  std::vector<char*> args;
  for (std::string& s : strings) args.push_back(s.data());
  args.push_back(nullptr);

  Subprocess child;
  const int error =
      posix_spawnp(&child.pid_, program.c_str(), actions.get(), nullptr, args.data(), environ);
  if (error != 0) {
    child.pid_ = -1;
    return Status::IoError(fmt::format("cannot start {}: {}", program, std::strerror(error)));
  }
  child.out_fd_ = out.Take(0);
  child.err_fd_ = err.Take(0);
  if (input && !input->empty()) {
    child.in_fd_ = in.Take(1);
    ::fcntl(child.in_fd_, F_SETFL, ::fcntl(child.in_fd_, F_GETFL) | O_NONBLOCK);
    child.input_ = std::move(*input);
  }
  return child;  // `in`, `out` and `err` close the child's ends (and an empty input's pipe)
}

Result<Subprocess> Subprocess::Run(const std::string& program, const std::vector<std::string>& argv,
                                   std::optional<std::string> input) {
  PIPETTE_ASSIGN_OR_RETURN(Subprocess child, Start(program, argv, std::move(input)));
  // Writing the input or reading one output to its end first would deadlock on a child that
  // fills another pipe: poll them all.
  while (!child.done()) {
    std::vector<pollfd> fds = child.PollFds();
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      return Status::IoError(fmt::format("poll: {}", std::strerror(errno)));
    }
    for (const pollfd& p : fds) {
      if (p.revents != 0) child.Transfer(p.fd);
    }
  }
  child.Wait();
  return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      in_fd_(std::exchange(other.in_fd_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)),
      input_(std::move(other.input_)),
      written_(other.written_),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      exit_(other.exit_) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    in_fd_ = std::exchange(other.in_fd_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
    input_ = std::move(other.input_);
    written_ = other.written_;
    out_ = std::move(other.out_);
    err_ = std::move(other.err_);
    exit_ = other.exit_;
  }
  return *this;
}

Subprocess::~Subprocess() { Release(); }

void Subprocess::Release() {
  CloseFd(in_fd_);
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

std::vector<pollfd> Subprocess::PollFds() const {
  std::vector<pollfd> fds;
  if (in_fd_ >= 0) fds.push_back({in_fd_, POLLOUT, 0});
  for (int fd : {out_fd_, err_fd_}) {
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  }
  return fds;
}

void Subprocess::Transfer(int fd) {
  if (fd < 0) return;
  if (fd == in_fd_) {
    const ssize_t n = WriteWithoutSigpipe(fd, input_.data() + written_, input_.size() - written_);
    if (n > 0) written_ += static_cast<std::size_t>(n);
    // All written, or the child stopped reading (EPIPE) or another error: done with the input.
    if (written_ == input_.size() || (n < 0 && errno != EAGAIN)) CloseFd(in_fd_);
    return;
  }
  if (fd != out_fd_ && fd != err_fd_) return;
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

ExitStatus Subprocess::Wait() {
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

}  // namespace pipette
