// The typed-in published values the paper tables read (experiments/papers/*.csv) and the cells
// they print: a data file is '#' lines (its sources), then a header line and comma-separated rows;
// errors name the file, the line and the rule. Used by the tables of this layer only. Pure
// functions apart from reading the files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/papers/comparison.h"

namespace pipette::paper_data {

struct DataFile {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // 1-based line number of each row
};

// InvalidArgument "paper data 'PATH' line N: RULE".
Status FileError(const DataFile& file, int line, const std::string& rule);

// Reads `dir`/`name` (at most 1 MiB) and checks that its header is `columns`, and every row has
// that many cells.
Result<DataFile> ReadDataFile(const std::string& dir, std::string_view name,
                              const std::vector<std::string>& columns);

// The cell at (row, column) as a non-negative number, or as a whole number in [1, 1000000].
Result<double> ParseNumber(const DataFile& file, std::size_t row, std::size_t column);
Result<int> ParseCount(const DataFile& file, std::size_t row, std::size_t column);

// The match column: "yes", "no (a)" for a documented deviation, "NO" otherwise.
std::string MatchCell(const ComparisonRow& row);
// `value` with `digits` digits after the point.
std::string Fixed(double value, int digits);
// A number as the tables print it: integers without a fraction, else up to six digits.
std::string Number(double value);

}  // namespace pipette::paper_data
