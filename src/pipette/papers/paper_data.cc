#include "pipette/papers/paper_data.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <utility>

#include "pipette/common/bounded_file.h"
#include "pipette/common/printable.h"
#include "pipette/common/split.h"

namespace pipette::paper_data {

constexpr std::uintmax_t kMaxDataFileBytes = 1 << 20;

Status FileError(const DataFile& file, int line, const std::string& rule) {
  return Status::InvalidArgument(
      fmt::format("paper data '{}' line {}: {}", Printable(file.path), line, rule));
}

Result<DataFile> ReadDataFile(const std::string& dir, std::string_view name,
                              const std::vector<std::string>& columns) {
  DataFile file;
  file.path = dir + "/" + std::string(name);
  PIPETTE_ASSIGN_OR_RETURN(std::string text,
                           ReadFileBounded(file.path, kMaxDataFileBytes, "paper data"));
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells = SplitAt(line, ',');
    if (file.header.empty()) {
      if (cells != columns) {
        return FileError(file, number,
                         fmt::format("header '{}': must be '{}'", Printable(line),
                                     fmt::format("{}", fmt::join(columns, ","))));
      }
      file.header = std::move(cells);
      continue;
    }
    if (cells.size() != columns.size()) {
      return FileError(file, number,
                       fmt::format("{} cells: must be {}", cells.size(), columns.size()));
    }
    file.rows.push_back(std::move(cells));
    file.lines.push_back(number);
  }
  if (file.header.empty()) return FileError(file, 0, "no header line");
  return file;
}

Result<double> ParseNumber(const DataFile& file, std::size_t row, std::size_t column) {
  const std::string& text = file.rows[row][column];
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0.0) {
    return FileError(file, file.lines[row],
                     fmt::format("{} = '{}': must be a non-negative number", file.header[column],
                                 Printable(text)));
  }
  return value;
}

Result<int> ParseCount(const DataFile& file, std::size_t row, std::size_t column) {
  PIPETTE_ASSIGN_OR_RETURN(double value, ParseNumber(file, row, column));
  if (value < 1.0 || value > 1e6 || value != std::floor(value)) {
    return FileError(file, file.lines[row],
                     fmt::format("{} = '{}': must be a whole number in [1, 1000000]",
                                 file.header[column], Printable(file.rows[row][column])));
  }
  return static_cast<int>(value);
}

std::string MatchCell(const ComparisonRow& row) {
  if (row.match) return "yes";
  return row.deviation.empty() ? "NO" : "no " + row.deviation;
}

std::string Fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

std::string Number(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  std::string text = fmt::format("{:.6f}", value);
  while (text.back() == '0') text.pop_back();
  return text;
}

}  // namespace pipette::paper_data
