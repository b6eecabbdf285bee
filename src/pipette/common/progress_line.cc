#include "pipette/common/progress_line.h"

#include <fmt/core.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace pipette {
namespace {

// The terminal's width in columns (0: unknown, not a terminal).
int Columns(std::FILE* out) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

// An MPI launcher (Open MPI's mpirun, the parent of the ranks it starts on its own node) forwards a
// rank's standard error through a pipe as it comes: the rank's progress reaches a person when the
// launcher's own standard error is a terminal.
bool LauncherStderrIsTerminal() {
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr && std::getenv("PMIX_RANK") == nullptr) {
    return false;
  }
  char target[256];
  const std::string link = fmt::format("/proc/{}/fd/2", ::getppid());
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return false;
  const std::string_view path(target, static_cast<std::size_t>(n));
  return path.starts_with("/dev/pts/") || path.starts_with("/dev/tty");
}

}  // namespace

bool ProgressWanted(bool quiet) {
  if (quiet) return false;
  const char* forced = std::getenv("PIPETTE_PROGRESS");
  if (forced != nullptr && std::strcmp(forced, "1") == 0) return true;
  if (forced != nullptr && std::strcmp(forced, "0") == 0) return false;
  return ::isatty(STDERR_FILENO) == 1 || LauncherStderrIsTerminal();
}

std::string Duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

std::string TimeLeft(double elapsed_s, double done, double total) {
  if (!(done > 0) || !(total > done) || !(elapsed_s > 0)) return "";
  const double left = elapsed_s * (total - done) / done;
  return left < 0.5 ? "less than a second left" : "about " + Duration(left) + " left";
}

ProgressLine::ProgressLine(std::string label, std::FILE* out, bool enabled, double after_s,
                           double interval_s)
    : label_(std::move(label)),
      out_(out),
      enabled_(enabled),
      after_s_(after_s),
      interval_s_(interval_s),
      start_(Clock::now()) {
  if (const char* after = std::getenv("PIPETTE_PROGRESS_AFTER"); after != nullptr) {
    char* end = nullptr;
    const double value = std::strtod(after, &end);
    if (end != after && *end == '\0' && value >= 0 && std::isfinite(value)) after_s_ = value;
  }
}

std::string ProgressLine::Text(double done, double total, std::string_view detail, double elapsed_s,
                               int width) const {
  std::string text = label_ + ": ";
  if (total > 0) text += fmt::format("{:.0f}% ", std::floor(100 * std::min(done / total, 1.0)));
  text += fmt::format("({}), {}", detail, Duration(elapsed_s));
  if (const std::string left = TimeLeft(elapsed_s, done, total); !left.empty()) {
    text += ", " + left;
  }
  // A line longer than the terminal wraps, and the next redraw would start on the wrapped half.
  if (width > 1 && static_cast<int>(text.size()) >= width) {
    text.resize(static_cast<std::size_t>(width - 1));
  }
  return text;
}

void ProgressLine::Update(double done, double total, std::string_view detail,
                          Clock::time_point now) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < after_s_) return;
  if (drawn_ && std::chrono::duration<double>(now - last_).count() < interval_s_) return;
  last_ = now;
  drawn_ = true;
  fmt::print(out_, "\r\033[K{}", Text(done, total, detail, elapsed, Columns(out_)));
  std::fflush(out_);
}

void ProgressLine::End() {
  if (!drawn_) return;
  fmt::print(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace pipette
