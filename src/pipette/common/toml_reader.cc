#include "pipette/common/toml_reader.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "pipette/common/printable.h"

namespace pipette {
namespace {

// Reads `key` of `reader` with `convert` (node -> Result<T>): nullopt when absent, MissingKey when
// absent and required.
template <typename T, typename Convert>
Result<std::optional<T>> Find(const TomlTableReader& reader, std::string_view key, Presence need,
                              Convert convert) {
  const toml::node* node = reader.Get(key);
  if (node == nullptr) {
    if (need == Presence::kRequired) return reader.MissingKey(key);
    return std::optional<T>();
  }
  PIPETTE_ASSIGN_OR_RETURN(T value, convert(*node));
  return std::optional<T>(std::move(value));
}

// The value of a required read (Find never returns nullopt for one).
template <typename T>
Result<T> Present(Result<std::optional<T>> found) {
  if (!found.ok()) return found.status();
  return std::move(*std::move(found).value());
}

// The value of an optional read, or `fallback`.
template <typename T>
Result<T> ValueOr(Result<std::optional<T>> found, T fallback) {
  if (!found.ok()) return found.status();
  std::optional<T> value = std::move(found).value();
  return value ? std::move(*value) : std::move(fallback);
}

}  // namespace

std::string ShowToml(const toml::node& node) {
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

std::string JoinChoices(std::span<const std::string_view> choices, std::string_view conjunction) {
  std::string text;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) text += (i + 1 == choices.size()) ? fmt::format(" {} ", conjunction) : ", ";
    text += choices[i];
  }
  return text;
}

std::vector<std::pair<std::string, const toml::node*>> InFileOrder(const toml::table& table) {
  std::vector<std::pair<std::string, const toml::node*>> entries;
  for (const auto& [key, node] : table) entries.emplace_back(std::string(key.str()), &node);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const toml::source_position& x = a.second->source().begin;
    const toml::source_position& y = b.second->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  return entries;
}

Result<toml::table> TomlOrigin::Parse(std::string_view text) const {
  try {
    return toml::parse(text, path_);
  } catch (const toml::parse_error& e) {
    const toml::source_position& at = e.source().begin;
    if (label_.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}:{}:{}: {}", path_, at.line, at.column, e.description()));
    }
    return Status::InvalidArgument(
        fmt::format("{}: line {}, column {}: {}", label_, at.line, at.column, e.description()));
  }
}

Status TomlOrigin::Error(const toml::node* at, std::string_view message) const {
  if (!label_.empty()) return Status::InvalidArgument(fmt::format("{}: {}", label_, message));
  const auto line = at != nullptr ? at->source().begin.line : 1;
  return Status::InvalidArgument(fmt::format("{}:{}: {}", path_, line, message));
}

std::string TomlTableReader::Path(std::string_view key) const { return prefix_ + std::string(key); }

Status TomlTableReader::Error(const toml::node* at, std::string_view message) const {
  const toml::node* where = at != nullptr ? at : table_;
  if (context_.empty()) return origin_->Error(where, message);
  return origin_->Error(where, fmt::format("{}: {}", context_, message));
}

Status TomlTableReader::MissingKey(std::string_view key) const {
  return Error(nullptr, fmt::format(fmt::runtime(missing_message_), fmt::arg("key", Path(key))));
}

Status TomlTableReader::RejectUnknownKeys(std::span<const std::string_view> allowed,
                                          std::string_view message) const {
  for (const auto& [key, node] : InFileOrder(*table_)) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    return Error(node, fmt::format(fmt::runtime(message), fmt::arg("key", Path(key)),
                                   fmt::arg("expected", JoinChoices(allowed))));
  }
  return Status::Ok();
}

Result<std::optional<std::int64_t>> TomlTableReader::FindInteger(std::string_view key,
                                                                 IntRange range,
                                                                 Presence need) const {
  return Find<std::int64_t>(*this, key, need, [&](const toml::node& node) -> Result<std::int64_t> {
    const std::string path = Path(key);
    if (!node.is_integer()) {
      return Error(&node, fmt::format("{} = {}: must be an integer", path, ShowToml(node)));
    }
    const std::int64_t value = node.as_integer()->get();
    if (value < range.min) {
      return Error(&node, fmt::format("{} = {}: must be >= {}", path, value, range.min));
    }
    if (value > range.max) {
      return Error(&node,
                   fmt::format("{} = {}: more than the limit of {}", path, value, range.max));
    }
    return value;
  });
}

Result<std::int64_t> TomlTableReader::Integer(std::string_view key, IntRange range) const {
  return Present(FindInteger(key, range, Presence::kRequired));
}

Result<std::int64_t> TomlTableReader::Integer(std::string_view key, IntRange range,
                                              std::int64_t fallback) const {
  return ValueOr(FindInteger(key, range), fallback);
}

Result<std::optional<double>> TomlTableReader::FindNumber(std::string_view key,
                                                          const NumberRange& range,
                                                          Presence need) const {
  return Find<double>(*this, key, need, [&](const toml::node& node) -> Result<double> {
    const std::string path = Path(key);
    double value = 0;
    if (node.is_integer()) {
      value = static_cast<double>(node.as_integer()->get());
    } else if (node.is_floating_point()) {
      value = node.as_floating_point()->get();
    } else {
      return Error(&node, fmt::format("{} = {}: must be a number", path, ShowToml(node)));
    }
    const bool below = range.min_exclusive ? value <= range.min : value < range.min;
    if (!std::isfinite(value) || below) {
      std::string rule(range.rule);
      if (rule.empty()) {
        rule = !std::isfinite(value)
                   ? "a finite number"
                   : fmt::format("{} {:g}", range.min_exclusive ? ">" : ">=", range.min);
      }
      return Error(&node, fmt::format("{} = {}: must be {}", path, ShowToml(node), rule));
    }
    if (value > range.max) {
      return Error(&node, fmt::format("{} = {}: more than the limit of {:g}", path, ShowToml(node),
                                      range.max));
    }
    return value;
  });
}

Result<double> TomlTableReader::Number(std::string_view key, const NumberRange& range) const {
  return Present(FindNumber(key, range, Presence::kRequired));
}

Result<double> TomlTableReader::Number(std::string_view key, const NumberRange& range,
                                       double fallback) const {
  return ValueOr(FindNumber(key, range), fallback);
}

Result<std::optional<bool>> TomlTableReader::FindBool(std::string_view key, Presence need) const {
  return Find<bool>(*this, key, need, [&](const toml::node& node) -> Result<bool> {
    if (!node.is_boolean()) {
      return Error(&node, fmt::format("{} = {}: must be true or false", Path(key), ShowToml(node)));
    }
    return node.as_boolean()->get();
  });
}

Result<bool> TomlTableReader::Bool(std::string_view key) const {
  return Present(FindBool(key, Presence::kRequired));
}

Result<bool> TomlTableReader::Bool(std::string_view key, bool fallback) const {
  return ValueOr(FindBool(key), fallback);
}

namespace {

// The position of the first control byte in `value` (0x00-0x1f, 0x7f), if any. Names with an ESC
// or BEL reached the terminal raw through every command that prints them. Free text (`source`,
// `description`) is not checked: it may quote a host name (calibrate writes it escaped, and it
// reads back as it was); every command prints it escaped (common/printable.h).
std::optional<std::size_t> ControlByteIn(std::string_view key, std::string_view value) {
  if (key == "source" || key == "description") return std::nullopt;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (IsControlByte(value[i])) return i;
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<std::string>> TomlTableReader::FindString(std::string_view key, Presence need,
                                                               EmptyString empty) const {
  return Find<std::string>(*this, key, need, [&](const toml::node& node) -> Result<std::string> {
    if (!node.is_string()) {
      return Error(&node, fmt::format("{} = {}: must be a string", Path(key), ShowToml(node)));
    }
    const std::string& value = node.as_string()->get();
    if (value.empty() && empty == EmptyString::kRejected) {
      return Error(&node, fmt::format("{} = '': must not be empty", Path(key)));
    }
    if (const std::optional<std::size_t> at = ControlByteIn(key, value)) {
      return Error(&node, fmt::format("{} = '{}': a control byte at position {}: strings in a file "
                                      "must be printable",
                                      Path(key), Printable(value), *at + 1));
    }
    return value;
  });
}

Result<std::string> TomlTableReader::String(std::string_view key) const {
  return Present(FindString(key, Presence::kRequired));
}

Result<std::string> TomlTableReader::String(std::string_view key, std::string fallback) const {
  return ValueOr(FindString(key), std::move(fallback));
}

Result<std::optional<std::string>> TomlTableReader::FindChoice(
    std::string_view key, std::span<const std::string_view> choices, std::string_view what,
    Presence need) const {
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> value, FindString(key, need));
  if (value && std::find(choices.begin(), choices.end(), *value) == choices.end()) {
    const toml::node* node = Get(key);
    return Error(node, fmt::format("{} = {}: unknown {} (expected {})", Path(key), ShowToml(*node),
                                   what, JoinChoices(choices)));
  }
  return value;
}

Result<std::string> TomlTableReader::Choice(std::string_view key,
                                            std::span<const std::string_view> choices,
                                            std::string_view what) const {
  return Present(FindChoice(key, choices, what, Presence::kRequired));
}

Result<std::string> TomlTableReader::Choice(std::string_view key,
                                            std::span<const std::string_view> choices,
                                            std::string_view what, std::string fallback) const {
  return ValueOr(FindChoice(key, choices, what), std::move(fallback));
}

Result<const toml::table*> TomlTableReader::FindTable(std::string_view key, Presence need,
                                                      std::string_view hint) const {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    if (need == Presence::kRequired) return MissingKey(key);
    return static_cast<const toml::table*>(nullptr);
  }
  if (!node->is_table()) {
    return Error(node, fmt::format("{} = {}: must be a table{}", Path(key), ShowToml(*node), hint));
  }
  return node->as_table();
}

Result<std::optional<std::vector<std::string>>> TomlTableReader::FindStringArray(
    std::string_view key, std::string_view what, Presence need) const {
  using Strings = std::vector<std::string>;
  return Find<Strings>(*this, key, need, [&](const toml::node& node) -> Result<Strings> {
    // Built only for an error: an array of thousands of inputs is shown in full there.
    const auto shown = [&] { return fmt::format("{} = {}", Path(key), ShowToml(node)); };
    const toml::array* array = node.as_array();
    if (array == nullptr)
      return Error(&node, fmt::format("{}: must be an array of {}", shown(), what));
    Strings values;
    values.reserve(array->size());
    std::unordered_set<std::string_view> seen;  // views of the array's own strings
    for (const toml::node& element : *array) {
      if (!element.is_string() || element.as_string()->get().empty()) {
        return Error(&element,
                     fmt::format("{}: every element must be a non-empty string", shown()));
      }
      const std::string& value = element.as_string()->get();
      if (const std::optional<std::size_t> at = ControlByteIn(key, value)) {
        return Error(&element, fmt::format("{}: '{}' has a control byte at position {}: strings "
                                           "in a file must be printable",
                                           Path(key), Printable(value), *at + 1));
      }
      if (!seen.insert(value).second) {
        return Error(&element, fmt::format("{}: lists '{}' twice", shown(), value));
      }
      values.push_back(value);
    }
    return values;
  });
}

}  // namespace pipette
