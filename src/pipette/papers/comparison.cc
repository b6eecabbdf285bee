#include "pipette/papers/comparison.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "pipette/common/printable.h"
#include "pipette/papers/dualpipe.h"
#include "pipette/papers/megatron.h"
#include "pipette/papers/zero_bubble.h"

namespace pipette {

int ComparisonTable::compared() const {
  return static_cast<int>(
      std::count_if(rows.begin(), rows.end(), [](const ComparisonRow& r) { return r.compared; }));
}

int ComparisonTable::unexplained() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const ComparisonRow& r) {
    return r.compared && !r.match && r.deviation.empty();
  }));
}

int ComparisonTable::matched() const {
  return static_cast<int>(std::count_if(
      rows.begin(), rows.end(), [](const ComparisonRow& r) { return r.compared && r.match; }));
}

const std::vector<std::string>& PaperTableNames() {
  static const std::vector<std::string> names = {"zero-bubble", "megatron", "dualpipe"};
  return names;
}

Result<ComparisonTable> BuildComparison(std::string_view name, const std::string& dir) {
  if (name == "zero-bubble") return ZeroBubbleComparison(dir);
  if (name == "megatron") return MegatronComparison(dir);
  if (name == "dualpipe") return DualPipeComparison(dir);
  return Status::NotFound(fmt::format("unknown paper table '{}': must be one of {}",
                                      Printable(name),
                                      fmt::format("{}", fmt::join(PaperTableNames(), ", "))));
}

namespace {

std::string CsvCell(const std::string& cell) {
  if (cell.find_first_of(",\"") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string Summary(const ComparisonTable& t) {
  const int explained = t.compared() - t.matched() - t.unexplained();
  return fmt::format(
      "{} of {} compared cells match, {} differ for the documented reason, {} differ without one "
      "({} typed in without a pipette counterpart)",
      t.matched(), t.compared(), explained, t.unexplained(),
      static_cast<int>(t.rows.size()) - t.compared());
}

}  // namespace

std::string FormatMarkdown(const ComparisonTable& table) {
  std::string out;
  for (const std::string& note : table.notes) out += "- " + note + "\n";
  out += "\n| " + fmt::format("{}", fmt::join(table.header, " | ")) + " |\n|";
  for (std::size_t c = 0; c < table.header.size(); ++c) out += "---|";
  out += "\n";
  for (const ComparisonRow& row : table.rows) {
    std::string line = "|";
    for (const std::string& cell : row.cells) {
      std::string escaped;
      for (char ch : cell) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
      line += " " + escaped + " |";
    }
    out += line + "\n";
  }
  return out + "\n" + Summary(table) + ".\n";
}

std::string FormatCsv(const ComparisonTable& table) {
  std::string out;
  for (const std::string& note : table.notes) out += "# " + note + "\n";
  out += "# " + Summary(table) + "\n";
  std::vector<std::string> cells;
  for (const std::string& h : table.header) cells.push_back(CsvCell(h));
  out += fmt::format("{}", fmt::join(cells, ",")) + "\n";
  for (const ComparisonRow& row : table.rows) {
    cells.clear();
    for (const std::string& c : row.cells) cells.push_back(CsvCell(c));
    out += fmt::format("{}", fmt::join(cells, ",")) + "\n";
  }
  return out;
}

}  // namespace pipette
