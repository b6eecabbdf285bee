#include "cli/sweep_spec.h"

#include <fmt/core.h>
#include <toml++/toml.h>  // toml::parse, toml::table: the TOML reader

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace pipette::cli {
namespace {

// More points than this is a mistake in the spec, not a study.
constexpr std::size_t kMaxPoints = 100000;
constexpr std::uintmax_t kMaxSpecBytes = std::uintmax_t{1} << 20;

constexpr std::string_view kTopLevelKeys[] = {"name",  "description", "command",
                                              "fixed", "axes",        "figures"};
constexpr std::string_view kFigureKeys[] = {"kind", "out", "where", "x"};

template <typename Range>
bool Contains(const Range& range, std::string_view word) {
  return std::find(std::begin(range), std::end(range), word) != std::end(range);
}

// "a, b or c".
template <typename Range>
std::string Words(const Range& range) {
  std::string text;
  const std::size_t n = std::size(range);
  std::size_t i = 0;
  for (const auto& word : range) {
    if (i > 0) text += i + 1 == n ? " or " : ", ";
    text += word;
    ++i;
  }
  return text;
}

// The value as TOML writes it (for messages about a wrong value).
std::string Show(const toml::node& node) {
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

// "path:line: message".
Status Error(const std::string& path, const toml::node& node, std::string_view message) {
  return Status::InvalidArgument(fmt::format("{}:{}: {}", path, node.source().begin.line, message));
}

// The entries of `table` in file order (toml::table iterates sorted by key).
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

// Keys name command-line options: lower-case letters, digits and '-'.
Status CheckKey(const std::string& path, const toml::node& node, std::string_view section,
                const std::string& key) {
  const bool ok =
      !key.empty() && key.front() != '-' && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      });
  if (ok) return Status::Ok();
  return Error(path, node,
               fmt::format("{} key '{}': must be an option name (lower-case letters, digits and "
                           "'-', without the leading dashes)",
                           section, key));
}

// A scalar of [fixed], [axes] or `where`, in canonical form.
Result<SweepValue> ToValue(const std::string& path, const toml::node& node,
                           std::string_view where) {
  SweepValue value;
  if (const auto* s = node.as_string()) {
    value.kind = SweepValue::Kind::kString;
    value.text = s->get();
    if (value.text.find_first_of(";\n") != std::string::npos) {
      return Error(path, node,
                   fmt::format("{} = {}: values may not contain ';' or a line break (';' "
                               "separates the settings of a point key)",
                               where, Show(node)));
    }
  } else if (const auto* i = node.as_integer()) {
    value.kind = SweepValue::Kind::kInteger;
    value.text = fmt::format("{}", i->get());
  } else if (const auto* f = node.as_floating_point()) {
    value.kind = SweepValue::Kind::kFloat;
    value.text = fmt::format("{}", f->get());
  } else if (const auto* b = node.as_boolean()) {
    value.kind = SweepValue::Kind::kBool;
    value.text = b->get() ? "true" : "false";
  } else {
    return Error(path, node,
                 fmt::format("{} = {}: must be a string, number or boolean", where, Show(node)));
  }
  return value;
}

Result<std::string> ToString(const std::string& path, const toml::node& node,
                             std::string_view key) {
  const auto* s = node.as_string();
  if (s == nullptr) {
    return Error(path, node, fmt::format("{} = {}: must be a string", key, Show(node)));
  }
  return s->get();
}

// A list of scalars (or one scalar, in `where`).
Result<std::vector<SweepValue>> ToValues(const std::string& path, const toml::node& node,
                                         const std::string& where, bool scalar_ok) {
  std::vector<SweepValue> values;
  const auto* array = node.as_array();
  if (array == nullptr) {
    if (!scalar_ok) {
      return Error(path, node,
                   fmt::format("{} = {}: an axis must be a list of values, e.g. [{}]", where,
                               Show(node), Show(node)));
    }
    PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(path, node, where));
    values.push_back(std::move(value));
    return values;
  }
  if (array->empty()) {
    return Error(path, node,
                 fmt::format("{} = []: needs at least one value (an empty {} selects nothing)",
                             where, scalar_ok ? "list" : "axis"));
  }
  for (const toml::node& element : *array) {
    PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(path, element, where));
    for (const SweepValue& seen : values) {
      if (seen.text == value.text) {
        return Error(path, element,
                     fmt::format("{} = {}: lists {} twice (every point would run twice)", where,
                                 Show(node), value.text));
      }
    }
    values.push_back(std::move(value));
  }
  return values;
}

// The values of axis `name` (its keys already in `axis`): a list of scalars for one key, a list of
// tuples with one value per key for linked keys.
Status ParseAxisValues(const std::string& path, const toml::node& node, const std::string& name,
                       SweepAxis& axis) {
  const std::string where = "[axes] " + (axis.keys.size() > 1 ? "\"" + name + "\"" : name);
  if (axis.keys.size() == 1) {
    PIPETTE_ASSIGN_OR_RETURN(std::vector<SweepValue> values,
                             ToValues(path, node, where, /*scalar_ok=*/false));
    for (SweepValue& value : values) axis.values.push_back({std::move(value)});
    return Status::Ok();
  }
  const auto* array = node.as_array();
  if (array == nullptr || array->empty()) {
    return Error(path, node,
                 fmt::format("{} = {}: linked keys take a non-empty list of tuples with one value "
                             "per key, e.g. [[8, 16], [16, 8]]",
                             where, Show(node)));
  }
  for (const toml::node& element : *array) {
    const auto* tuple = element.as_array();
    if (tuple == nullptr || tuple->size() != axis.keys.size()) {
      return Error(path, element,
                   fmt::format("{} = {}: each entry needs {} values, one per key ({} is not)",
                               where, Show(node), axis.keys.size(), Show(element)));
    }
    std::vector<SweepValue> values;
    for (const toml::node& scalar : *tuple) {
      PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(path, scalar, where));
      values.push_back(std::move(value));
    }
    if (std::find(axis.values.begin(), axis.values.end(), values) != axis.values.end()) {
      return Error(path, element,
                   fmt::format("{} = {}: lists {} twice (every point would run twice)", where,
                               Show(node), Show(element)));
    }
    axis.values.push_back(std::move(values));
  }
  return Status::Ok();
}

Status ParseFigure(const SweepSpec& spec, const toml::node& node, std::size_t index,
                   SweepFigure& figure) {
  const std::string& path = spec.path;
  const std::string name = fmt::format("figures[{}]", index);
  const auto* table = node.as_table();
  if (table == nullptr) {
    return Error(
        path, node,
        fmt::format("{} = {}: must be a table ([[figures]] with kind and out)", name, Show(node)));
  }
  for (const auto& [key, value] : InFileOrder(*table)) {
    if (!Contains(kFigureKeys, key)) {
      return Error(
          path, *value,
          fmt::format("{}.{}: unknown key (a figure has {})", name, key, Words(kFigureKeys)));
    }
  }
  const toml::node* kind = table->get("kind");
  if (kind == nullptr) {
    return Error(path, node, fmt::format("{}: needs kind = {}", name, Words(kSweepFigureKinds)));
  }
  PIPETTE_ASSIGN_OR_RETURN(figure.kind, ToString(path, *kind, name + ".kind"));
  if (!Contains(kSweepFigureKinds, figure.kind)) {
    return Error(path, *kind,
                 fmt::format("{}.kind = \"{}\": unknown figure kind (pipette plot draws {})", name,
                             figure.kind, Words(kSweepFigureKinds)));
  }
  if (const toml::node* out = table->get("out")) {
    PIPETTE_ASSIGN_OR_RETURN(figure.out, ToString(path, *out, name + ".out"));
    if (figure.out.empty()) {
      return Error(path, *out, fmt::format("{}.out = \"\": must name a file", name));
    }
  } else {
    figure.out = fmt::format("{}-{}.png", spec.name, figure.kind);
  }
  if (const toml::node* x = table->get("x")) {
    PIPETTE_ASSIGN_OR_RETURN(figure.x, ToString(path, *x, name + ".x"));
  }
  if (const toml::node* where = table->get("where")) {
    const auto* conditions = where->as_table();
    if (conditions == nullptr) {
      return Error(path, *where,
                   fmt::format("{}.where = {}: must be a table, e.g. {{ schedule = \"1f1b\" }}",
                               name, Show(*where)));
    }
    for (const auto& [key, value] : InFileOrder(*conditions)) {
      const std::string where_key = fmt::format("{}.where.{}", name, key);
      const bool known = std::any_of(spec.fixed.begin(), spec.fixed.end(),
                                     [&](const SweepSetting& s) { return s.key == key; }) ||
                         std::any_of(spec.axes.begin(), spec.axes.end(), [&](const SweepAxis& a) {
                           return std::find(a.keys.begin(), a.keys.end(), key) != a.keys.end();
                         });
      if (!known) {
        return Error(path, *value,
                     fmt::format("{}: '{}' is neither in [fixed] nor in [axes] (where selects "
                                 "points by their settings)",
                                 where_key, key));
      }
      PIPETTE_ASSIGN_OR_RETURN(std::vector<SweepValue> values,
                               ToValues(path, *value, where_key, /*scalar_ok=*/true));
      figure.where.push_back({key, std::move(values)});
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SweepSpec> ParseSweepSpec(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: {}", path, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  SweepSpec spec;
  spec.path = path;
  spec.text = std::string(text);
  spec.name = std::filesystem::path(path).stem().string();
  for (const auto& [key, node] : InFileOrder(root)) {
    if (!Contains(kTopLevelKeys, key)) {
      return Error(
          path, *node,
          fmt::format("unknown key '{}' (a sweep spec has {})", key, Words(kTopLevelKeys)));
    }
  }
  if (const toml::node* name = root.get("name")) {
    PIPETTE_ASSIGN_OR_RETURN(spec.name, ToString(path, *name, "name"));
    if (spec.name.empty()) {
      return Error(path, *name, "name = \"\": must name the experiment (or leave it out)");
    }
  }
  if (spec.name.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: the file has no stem to name the experiment; set name = \"...\"", path));
  }
  if (const toml::node* description = root.get("description")) {
    PIPETTE_ASSIGN_OR_RETURN(spec.description, ToString(path, *description, "description"));
  }
  if (const toml::node* command = root.get("command")) {
    PIPETTE_ASSIGN_OR_RETURN(spec.command, ToString(path, *command, "command"));
    if (spec.command != "simulate") {
      return Error(path, *command,
                   fmt::format("command = \"{}\": a sweep runs simulate (the only command "
                               "sweeps support so far)",
                               spec.command));
    }
  }

  if (const toml::node* fixed = root.get("fixed")) {
    const auto* table = fixed->as_table();
    if (table == nullptr) {
      return Error(path, *fixed,
                   fmt::format("fixed = {}: must be a table ([fixed])", Show(*fixed)));
    }
    for (const auto& [key, node] : InFileOrder(*table)) {
      PIPETTE_RETURN_IF_ERROR(CheckKey(path, *node, "[fixed]", key));
      if (node->is_array() || node->is_table()) {
        return Error(path, *node,
                     fmt::format("[fixed] {} = {}: must be one value (lists belong in [axes])", key,
                                 Show(*node)));
      }
      PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(path, *node, "[fixed] " + key));
      spec.fixed.push_back({key, std::move(value)});
    }
  }
  if (const toml::node* axes = root.get("axes")) {
    const auto* table = axes->as_table();
    if (table == nullptr) {
      return Error(path, *axes, fmt::format("axes = {}: must be a table ([axes])", Show(*axes)));
    }
    for (const auto& [name, node] : InFileOrder(*table)) {
      SweepAxis axis;
      for (std::size_t begin = 0; begin <= name.size();) {
        const std::size_t end = std::min(name.find(',', begin), name.size());
        axis.keys.push_back(name.substr(begin, end - begin));
        begin = end + 1;
      }
      for (const std::string& key : axis.keys) {
        PIPETTE_RETURN_IF_ERROR(CheckKey(path, *node, "[axes]", key));
        for (const SweepSetting& fixed_setting : spec.fixed) {
          if (fixed_setting.key == key) {
            return Error(path, *node,
                         fmt::format("[axes] {} = {}: '{}' is also in [fixed] (= {}); a key is "
                                     "either fixed or an axis",
                                     name, Show(*node), key, fixed_setting.value.text));
          }
        }
        const bool twice = std::count(axis.keys.begin(), axis.keys.end(), key) > 1 ||
                           std::any_of(spec.axes.begin(), spec.axes.end(), [&](const SweepAxis& a) {
                             return std::find(a.keys.begin(), a.keys.end(), key) != a.keys.end();
                           });
        if (twice) {
          return Error(path, *node,
                       fmt::format("[axes] {}: '{}' is in two axes; a key varies in one axis "
                                   "(vary keys together with \"{},...\" = [[...], ...])",
                                   name, key, key));
        }
      }
      PIPETTE_RETURN_IF_ERROR(ParseAxisValues(path, *node, name, axis));
      spec.axes.push_back(std::move(axis));
    }
  }
  std::size_t points = 1;
  for (const SweepAxis& axis : spec.axes) {
    points *= axis.values.size();
    if (points > kMaxPoints) {
      return Status::InvalidArgument(
          fmt::format("{}: [axes] make more than {} points; split the study", path, kMaxPoints));
    }
  }

  if (const toml::node* figures = root.get("figures")) {
    const auto* list = figures->as_array();
    if (list == nullptr) {
      return Error(
          path, *figures,
          fmt::format("figures = {}: must be a list of tables ([[figures]])", Show(*figures)));
    }
    const std::vector<SweepPoint> all = ExpandPoints(spec);
    for (std::size_t i = 0; i < list->size(); ++i) {
      const toml::node& node = *list->get(i);
      SweepFigure figure;
      PIPETTE_RETURN_IF_ERROR(ParseFigure(spec, node, i, figure));
      for (const SweepFigure& other : spec.figures) {
        if (other.out == figure.out) {
          return Error(path, node,
                       fmt::format("figures[{}].out = \"{}\": another figure draws the same file",
                                   i, figure.out));
        }
      }
      const auto selected = std::count_if(
          all.begin(), all.end(), [&](const SweepPoint& p) { return FigureSelects(figure, p); });
      if (selected == 0) {
        return Error(path, node, fmt::format("figures[{}].where selects no point", i));
      }
      if (figure.kind == "timeline" && selected != 1) {
        return Error(path, node,
                     fmt::format("figures[{}]: kind = \"timeline\" draws one run, but its where "
                                 "selects {} points; narrow where to one value per axis",
                                 i, selected));
      }
      spec.figures.push_back(std::move(figure));
    }
  }
  return spec;
}

Result<SweepSpec> LoadSweepSpec(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(fmt::format("sweep spec '{}': no such file", path));
  }
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::IoError(fmt::format("sweep spec '{}': {}", path, ec.message()));
  if (size > kMaxSpecBytes) {
    return Status::InvalidArgument(fmt::format(
        "sweep spec '{}': {} bytes, more than the limit of {}", path, size, kMaxSpecBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return Status::IoError(fmt::format("sweep spec '{}': cannot be read", path));
  return ParseSweepSpec(text.str(), path);
}

Status CheckSweepOptions(const SweepSpec& spec, const std::vector<SweepOption>& options) {
  std::map<const SweepOption*, std::string> used;  // option -> the key that set it
  auto check = [&](const std::string& section, const std::string& key,
                   const std::vector<SweepValue>& values) -> Status {
    if (Contains(kSweepReservedOptions, key)) {
      return Status::InvalidArgument(
          fmt::format("{}: {} {}: the sweep sets --{} on every point itself (use pipette sweep's "
                      "own --db; the experiment is the spec's name)",
                      spec.path, section, key, key));
    }
    const SweepOption* option = nullptr;
    for (const SweepOption& o : options) {
      if (Contains(o.names, key)) option = &o;
    }
    if (option == nullptr) {
      return Status::InvalidArgument(
          fmt::format("{}: {} {}: {} has no option --{} (see pipette {} --help)", spec.path,
                      section, key, spec.command, key, spec.command));
    }
    if (auto [it, inserted] = used.emplace(option, key); !inserted) {
      return Status::InvalidArgument(
          fmt::format("{}: {} {}: names the same option as '{}'; set it once", spec.path, section,
                      key, it->second));
    }
    for (const SweepValue& value : values) {
      const bool is_bool = value.kind == SweepValue::Kind::kBool;
      if (option->is_flag && !is_bool) {
        return Status::InvalidArgument(
            fmt::format("{}: {} {} = {}: --{} is a flag; write true or false", spec.path, section,
                        key, value.text, key));
      }
      if (!option->is_flag && is_bool) {
        return Status::InvalidArgument(
            fmt::format("{}: {} {} = {}: --{} takes a value, not true/false", spec.path, section,
                        key, value.text, key));
      }
    }
    return Status::Ok();
  };
  for (const SweepSetting& s : spec.fixed) {
    PIPETTE_RETURN_IF_ERROR(check("[fixed]", s.key, {s.value}));
  }
  for (const SweepAxis& a : spec.axes) {
    for (std::size_t k = 0; k < a.keys.size(); ++k) {
      std::vector<SweepValue> column;
      for (const std::vector<SweepValue>& tuple : a.values) column.push_back(tuple[k]);
      PIPETTE_RETURN_IF_ERROR(check("[axes]", a.keys[k], column));
    }
  }
  return Status::Ok();
}

std::vector<SweepPoint> ExpandPoints(const SweepSpec& spec) {
  std::vector<SweepPoint> points;
  std::vector<std::size_t> index(spec.axes.size(), 0);
  for (const SweepAxis& axis : spec.axes) {
    if (axis.values.empty()) return points;
  }
  while (true) {
    std::vector<SweepSetting> settings = spec.fixed;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
      const SweepAxis& axis = spec.axes[a];
      for (std::size_t k = 0; k < axis.keys.size(); ++k) {
        settings.push_back({axis.keys[k], axis.values[index[a]][k]});
      }
    }
    std::sort(settings.begin(), settings.end(),
              [](const SweepSetting& x, const SweepSetting& y) { return x.key < y.key; });
    SweepPoint point;
    point.key = PointKey(settings);
    point.settings = std::move(settings);
    points.push_back(std::move(point));
    // Odometer: the last axis turns fastest.
    std::size_t a = spec.axes.size();
    while (a > 0 && ++index[a - 1] == spec.axes[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  return points;
}

std::string PointKey(std::vector<SweepSetting> settings) {
  std::sort(settings.begin(), settings.end(),
            [](const SweepSetting& x, const SweepSetting& y) { return x.key < y.key; });
  std::string key;
  for (const SweepSetting& s : settings) {
    if (!key.empty()) key += ';';
    key += s.key + "=" + s.value.text;
  }
  return key;
}

std::vector<std::string> PointArguments(const SweepPoint& point) {
  std::vector<std::string> args;
  for (const SweepSetting& s : point.settings) {
    const bool is_short = s.key.size() == 1;
    if (s.value.kind == SweepValue::Kind::kBool) {
      if (s.value.text == "true") args.push_back((is_short ? "-" : "--") + s.key);
      continue;
    }
    // Attached values: a value starting with '-' stays a value, never becomes an option.
    args.push_back(is_short ? "-" + s.key + s.value.text : "--" + s.key + "=" + s.value.text);
  }
  return args;
}

bool FigureSelects(const SweepFigure& figure, const SweepPoint& point) {
  for (const SweepCondition& condition : figure.where) {
    auto setting = std::find_if(point.settings.begin(), point.settings.end(),
                                [&](const SweepSetting& s) { return s.key == condition.key; });
    if (setting == point.settings.end()) return false;
    const bool match =
        std::any_of(condition.values.begin(), condition.values.end(),
                    [&](const SweepValue& v) { return v.text == setting->value.text; });
    if (!match) return false;
  }
  return true;
}

}  // namespace pipette::cli
