// SplitAt: the items of a separated list as the user typed them, for the option parsers that take
// "A,B,C" (--times, --rank-speed, a cluster's node list, run ids). Pure function.
//
// Example:
//   for (const std::string& item : SplitAt("F=1,I=2", ',')) ...  // "F=1", "I=2"
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipette {

// Returns every item of `text` between separators, untrimmed and empty ones included: "a,,b" gives
// "a", "", "b"; "" gives one empty item (a caller that takes an empty list checks for it first).
inline std::vector<std::string> SplitAt(std::string_view text, char separator) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    items.emplace_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return items;
    begin = end + 1;
  }
}

}  // namespace pipette
