#include "pipette/plot/figure.h"

#include <fmt/core.h>

#include <charconv>
#include <cstdint>
#include <filesystem>

#include "pipette/common/printable.h"
#include "pipette/common/replacing_file.h"
#include "pipette/common/subprocess.h"
#include "pipette/plot/figure_scripts.h"

namespace pipette {
namespace internal {

// A string as a gnuplot double-quoted literal.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string Rgb(std::uint32_t rgb) { return fmt::format("\"#{:06X}\"", rgb); }

Result<std::string> Terminal(const PlotOptions& o, int default_height) {
  const int height = o.height > 0 ? o.height : default_height;
  if (o.width < kMinPlotPixels || o.width > kMaxPlotPixels || height < kMinPlotPixels ||
      height > kMaxPlotPixels) {
    return Status::InvalidArgument(
        fmt::format("figure size {}x{} (height {}: the figure's default): width and height must "
                    "be in [{}, {}] pixels",
                    o.width, height, default_height, kMinPlotPixels, kMaxPlotPixels));
  }
  const std::string ext = std::filesystem::path(o.out).extension().string();
  std::string terminal;
  if (ext == ".png") {
    terminal = fmt::format("set terminal pngcairo size {},{} font \"sans,10\" noenhanced", o.width,
                           height);
  } else if (ext == ".svg") {
    terminal =
        fmt::format("set terminal svg size {},{} font \"sans,10\" noenhanced background \"white\"",
                    o.width, height);
  } else {
    return Status::InvalidArgument(fmt::format("--out = '{}': must end in .png or .svg", o.out));
  }
  return fmt::format("{}\nset output {}\nset encoding utf8\n", terminal, Quote(o.out));
}

}  // namespace internal

using internal::BubbleScript;
using internal::CompareScript;
using internal::ErrorsScript;
using internal::MemoryScript;
using internal::StepTimeScript;
using internal::TimelineScript;

Result<PlotKind> ParsePlotKind(std::string_view text) {
  if (text == "timeline") return PlotKind::kTimeline;
  if (text == "bubble") return PlotKind::kBubble;
  if (text == "memory") return PlotKind::kMemory;
  if (text == "compare") return PlotKind::kCompare;
  if (text == "steptime") return PlotKind::kStepTime;
  if (text == "errors") return PlotKind::kErrors;
  return Status::InvalidArgument(
      fmt::format("plot kind '{}': must be timeline, bubble, memory, compare, steptime or errors",
                  Printable(text)));
}

Result<PlotSize> ParsePlotSize(std::string_view text) {
  const auto invalid = [&] {
    return Status::InvalidArgument(fmt::format(
        "--size = '{}': must be WIDTHxHEIGHT in pixels, each in [{}, {}], e.g. 1200x600 (height 0: "
        "the figure's default)",
        Printable(text), kMinPlotPixels, kMaxPlotPixels));
  };
  const std::size_t cross = text.find('x');
  if (cross == std::string_view::npos) return invalid();
  PlotSize size;
  const auto read = [](std::string_view digits, int& value) {
    const char* end = digits.data() + digits.size();
    const auto [ptr, error] = std::from_chars(digits.data(), end, value);
    return !digits.empty() && error == std::errc() && ptr == end;
  };
  if (!read(text.substr(0, cross), size.width) || !read(text.substr(cross + 1), size.height)) {
    return invalid();
  }
  const auto in_range = [](int pixels) {
    return pixels >= kMinPlotPixels && pixels <= kMaxPlotPixels;
  };
  if (!in_range(size.width) || !(size.height == 0 || in_range(size.height))) return invalid();
  return size;
}

Result<std::string> FigureScript(PlotKind kind, const std::vector<RunData>& runs,
                                 const PlotOptions& options) {
  if (runs.empty()) return Status::InvalidArgument("--run: no runs to plot");
  switch (kind) {
    case PlotKind::kTimeline:
      return TimelineScript(runs, options);
    case PlotKind::kBubble:
      return BubbleScript(runs, options);
    case PlotKind::kMemory:
      return MemoryScript(runs, options);
    case PlotKind::kCompare:
      return CompareScript(runs, options);
    case PlotKind::kStepTime:
      return StepTimeScript(runs, options);
    case PlotKind::kErrors:
      return ErrorsScript(runs, options);
  }
  return Status::Internal("unknown plot kind");
}

Status DrawFigure(PlotKind kind, const std::vector<RunData>& runs, const PlotOptions& options) {
  // gnuplot draws aside and the figure is moved into place when it succeeded: a failed or killed
  // gnuplot leaves the previous figure (or none), never a truncated one.
  PIPETTE_ASSIGN_OR_RETURN(std::string script, FigureScript(kind, runs, options));
  ReplacingFile figure(options.out);
  const std::string output = "\nset output " + internal::Quote(options.out) + "\n";
  const std::size_t at = script.find(output);
  if (at == std::string::npos) return Status::Internal("the figure's script sets no output");
  script.replace(at, output.size(), "\nset output " + internal::Quote(figure.write_path()) + "\n");
  // gnuplot reads a script named /dev/stdin about 3x faster than its interactive standard input.
  Result<Subprocess> gnuplot =
      Subprocess::Run("gnuplot", {"gnuplot", "/dev/stdin"}, std::move(script));
  if (!gnuplot.ok()) {
    return Status::IoError(
        fmt::format("{} - is gnuplot installed? (scripts/install-deps.sh installs it)",
                    gnuplot.status().message()));
  }
  const ExitStatus exit = gnuplot->Wait();
  if (exit.code != 0) {
    // gnuplot names the file it wrote: the user's.
    std::string err = gnuplot->err();
    for (std::size_t at = err.find(figure.write_path()); at != std::string::npos;
         at = err.find(figure.write_path(), at + options.out.size())) {
      err.replace(at, figure.write_path().size(), options.out);
    }
    return Status::IoError(fmt::format("gnuplot failed ({}): {}\ngnuplot's output:\n{}",
                                       exit.Describe(), GnuplotReason(err), err));
  }
  return figure.Commit();
}

std::string GnuplotReason(std::string_view err) {
  std::vector<std::string_view> lines;
  for (std::size_t begin = 0; begin < err.size();) {
    std::size_t end = err.find('\n', begin);
    if (end == std::string_view::npos) end = err.size();
    std::string_view line = err.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) lines.push_back(line);
    begin = end + 1;
  }
  // gnuplot's own errors read `"/dev/stdin" line 2: cannot open file; output not changed`, maybe
  // followed by `system error: No such file or directory`.
  constexpr std::string_view kScript = "\"/dev/stdin\" ";
  for (std::size_t k = lines.size(); k-- > 0;) {
    const std::string_view line = lines[k];
    const std::size_t colon = line.find(": ");
    if (!line.starts_with(kScript) || colon == std::string_view::npos) continue;
    std::string where =
        fmt::format("{} of the script", line.substr(kScript.size(), colon - kScript.size()));
    for (std::size_t next = k + 1; next < lines.size(); ++next) {
      where += fmt::format("; {}", lines[next]);
    }
    return fmt::format("{} ({})", line.substr(colon + 2), where);
  }
  if (lines.empty()) return "it printed nothing";
  return std::string(lines.back());
}

}  // namespace pipette
