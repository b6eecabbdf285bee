#include "pipette/common/progress_line.h"

#include <fmt/core.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

// Writes `text` and flushes; false when the stream failed (a terminal hung up, a dead launcher).
bool Write(std::FILE* out, const std::string& text) {
  return std::fputs(text.c_str(), out) >= 0 && std::fflush(out) == 0;
}

}  // namespace

bool ProgressWanted(bool quiet) {
  if (quiet) return false;
  const char* forced = std::getenv("PIPETTE_PROGRESS");
  if (forced != nullptr && std::strcmp(forced, "1") == 0) return true;
  if (forced != nullptr && std::strcmp(forced, "0") == 0) return false;
  return ::isatty(STDERR_FILENO) == 1;
}

bool LauncherOutputIsTerminal() {
  // Open MPI's mpirun starts the ranks of its own node as its children, their standard output
  // through a pseudo-terminal whatever its own is: only its own says where the output goes.
  if (::isatty(STDOUT_FILENO) != 1) return false;
  char target[4096];
  const std::string exe = fmt::format("/proc/{}/exe", ::getppid());
  const ssize_t n = ::readlink(exe.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return false;
  const std::string name =
      std::filesystem::path(std::string(target, static_cast<std::size_t>(n))).filename();
  if (name != "mpirun" && name != "mpiexec" && name != "orterun" && name != "prterun") {
    return false;
  }
  const std::string fd = fmt::format("/proc/{}/fd/1", ::getppid());
  const ssize_t m = ::readlink(fd.c_str(), target, sizeof(target) - 1);
  if (m <= 0) return false;
  const std::string_view path(target, static_cast<std::size_t>(m));
  return path.starts_with("/dev/pts/") || path.starts_with("/dev/tty");
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
                           double interval_s, Clock::time_point start)
    : label_(std::move(label)),
      out_(out),
      enabled_(enabled),
      after_s_(after_s),
      interval_s_(interval_s),
      start_(start) {
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
  // A terminal of unknown width (a launcher's pseudo-terminal seen through a pipe) gets 80.
  const int width = Columns(out_);
  if (!Write(out_, "\r\033[K" + Text(done, total, detail, elapsed, width > 0 ? width : 80))) {
    enabled_ = false;  // nobody reads it: stop, never fail the work
  }
}

void ProgressLine::End() {
  if (!drawn_) return;
  drawn_ = false;
  if (!Write(out_, "\r\033[K")) enabled_ = false;
}

}  // namespace pipette
