#include "pipette/study/sweep_spec.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>

#include "pipette/common/bounded_file.h"
#include "pipette/common/printable.h"
#include "pipette/common/toml_reader.h"

namespace pipette {
namespace {

// More points than this is a mistake in the spec, not a study.
constexpr std::size_t kMaxPoints = 100000;
constexpr std::uintmax_t kMaxSpecBytes = std::uintmax_t{1} << 20;

constexpr std::string_view kTopLevelKeys[] = {
    "name", "description", "command", "predict", "calibration", "fit", "fixed", "axes", "figures"};
constexpr std::string_view kFigureKeys[] = {"kind", "out", "where", "x", "colour_by", "marker_by"};

template <typename Range>
bool Contains(const Range& range, std::string_view word) {
  return std::find(std::begin(range), std::end(range), word) != std::end(range);
}

// Keys name command-line options: lower-case letters, digits and '-'.
Status CheckKey(const TomlOrigin& origin, const toml::node& node, std::string_view section,
                const std::string& key) {
  const bool ok =
      !key.empty() && key.front() != '-' && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      });
  if (ok) return Status::Ok();
  return origin.Error(&node,
                      fmt::format("{} key '{}': must be an option name (lower-case letters, digits "
                                  "and '-', without the leading dashes)",
                                  section, key));
}

// Strings reach the point's child as command-line arguments and its point key: a NUL would cut
// them short there, and no option takes another control byte (line breaks included).
Status RejectControlBytes(const TomlOrigin& origin, const toml::node* node, std::string_view where,
                          std::string_view text) {
  const auto bad = std::find_if(text.begin(), text.end(), IsControlByte);
  if (bad == text.end()) return Status::Ok();
  return origin.Error(node,
                      fmt::format("{}: byte {} is the control byte 0x{:02x}; strings may not "
                                  "contain control bytes (they become command-line "
                                  "arguments and point keys)",
                                  where, bad - text.begin() + 1, static_cast<unsigned char>(*bad)));
}

// A scalar of [fixed], [axes] or `where`, in canonical form.
Result<SweepValue> ToValue(const TomlOrigin& origin, const toml::node& node,
                           std::string_view where) {
  SweepValue value;
  if (const auto* s = node.as_string()) {
    value.kind = SweepValue::Kind::kString;
    value.text = s->get();
    PIPETTE_RETURN_IF_ERROR(RejectControlBytes(origin, &node, where, value.text));
    if (value.text.find_first_of(";\n") != std::string::npos) {
      return origin.Error(&node, fmt::format("{} = {}: values may not contain ';' or a line break "
                                             "(';' separates the settings of a point key)",
                                             where, ShowToml(node)));
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
    return origin.Error(
        &node, fmt::format("{} = {}: must be a string, number or boolean", where, ShowToml(node)));
  }
  return value;
}

// A list of scalars (or one scalar, in `where`).
Result<std::vector<SweepValue>> ToValues(const TomlOrigin& origin, const toml::node& node,
                                         const std::string& where, bool scalar_ok) {
  std::vector<SweepValue> values;
  const auto* array = node.as_array();
  if (array == nullptr) {
    if (!scalar_ok) {
      return origin.Error(&node, fmt::format("{} = {}: an axis must be a list of values, e.g. [{}]",
                                             where, ShowToml(node), ShowToml(node)));
    }
    PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(origin, node, where));
    values.push_back(std::move(value));
    return values;
  }
  if (array->empty()) {
    return origin.Error(
        &node, fmt::format("{} = []: needs at least one value (an empty {} selects nothing)", where,
                           scalar_ok ? "list" : "axis"));
  }
  for (const toml::node& element : *array) {
    PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(origin, element, where));
    for (const SweepValue& seen : values) {
      if (seen.text == value.text) {
        return origin.Error(
            &element, fmt::format("{} = {}: lists {} twice (every point would run twice)", where,
                                  ShowToml(node), value.text));
      }
    }
    values.push_back(std::move(value));
  }
  return values;
}

// The values of axis `name` (its keys already in `axis`): a list of scalars for one key, a list of
// tuples with one value per key for linked keys.
Status ParseAxisValues(const TomlOrigin& origin, const toml::node& node, const std::string& name,
                       SweepAxis& axis) {
  const std::string where = "[axes] " + (axis.keys.size() > 1 ? "\"" + name + "\"" : name);
  if (axis.keys.size() == 1) {
    PIPETTE_ASSIGN_OR_RETURN(std::vector<SweepValue> values,
                             ToValues(origin, node, where, /*scalar_ok=*/false));
    for (SweepValue& value : values) axis.values.push_back({std::move(value)});
    return Status::Ok();
  }
  const auto* array = node.as_array();
  if (array == nullptr || array->empty()) {
    return origin.Error(&node,
                        fmt::format("{} = {}: linked keys take a non-empty list of tuples with one "
                                    "value per key, e.g. [[8, 16], [16, 8]]",
                                    where, ShowToml(node)));
  }
  for (const toml::node& element : *array) {
    const auto* tuple = element.as_array();
    if (tuple == nullptr || tuple->size() != axis.keys.size()) {
      return origin.Error(
          &element, fmt::format("{} = {}: each entry needs {} values, one per key ({} is not)",
                                where, ShowToml(node), axis.keys.size(), ShowToml(element)));
    }
    std::vector<SweepValue> values;
    for (const toml::node& scalar : *tuple) {
      PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(origin, scalar, where));
      values.push_back(std::move(value));
    }
    if (std::find(axis.values.begin(), axis.values.end(), values) != axis.values.end()) {
      return origin.Error(
          &element, fmt::format("{} = {}: lists {} twice (every point would run twice)", where,
                                ShowToml(node), ShowToml(element)));
    }
    axis.values.push_back(std::move(values));
  }
  return Status::Ok();
}

// Whether a point of `spec` sets `key` (in [fixed] or in an axis).
bool SetsKey(const SweepSpec& spec, std::string_view key) {
  return std::any_of(spec.fixed.begin(), spec.fixed.end(),
                     [&](const SweepSetting& s) { return s.key == key; }) ||
         std::any_of(spec.axes.begin(), spec.axes.end(),
                     [&](const SweepAxis& a) { return Contains(a.keys, key); });
}

// Reads a figure's `where` table into `figure`; `name` is "figures[i]".
Status ParseWhere(const SweepSpec& spec, const TomlOrigin& origin, const toml::table& conditions,
                  const std::string& name, SweepFigure& figure) {
  for (const auto& [key, value] : InFileOrder(conditions)) {
    const std::string where_key = fmt::format("{}.where.{}", name, key);
    if (!SetsKey(spec, key)) {
      return origin.Error(value, fmt::format("{}: '{}' is neither in [fixed] nor in [axes] (where "
                                             "selects points by their settings)",
                                             where_key, key));
    }
    PIPETTE_ASSIGN_OR_RETURN(std::vector<SweepValue> values,
                             ToValues(origin, *value, where_key, /*scalar_ok=*/true));
    figure.where.push_back({key, std::move(values)});
  }
  return Status::Ok();
}

Status ParseFigure(const SweepSpec& spec, const TomlOrigin& origin, const toml::node& node,
                   std::size_t index, SweepFigure& figure) {
  const std::string name = fmt::format("figures[{}]", index);
  const auto* table = node.as_table();
  if (table == nullptr) {
    return origin.Error(&node, fmt::format("{} = {}: must be a table ([[figures]] with kind and "
                                           "out)",
                                           name, ShowToml(node)));
  }
  const TomlTableReader reader(origin, *table, name + ".");
  PIPETTE_RETURN_IF_ERROR(
      reader.RejectUnknownKeys(kFigureKeys, "{key}: unknown key (a figure has {expected})"));
  if (reader.Get("kind") == nullptr) {
    return origin.Error(&node,
                        fmt::format("{}: needs kind = {}", name, JoinChoices(kSweepFigureKinds)));
  }
  PIPETTE_ASSIGN_OR_RETURN(figure.kind, reader.String("kind"));
  if (!Contains(kSweepFigureKinds, figure.kind)) {
    return origin.Error(reader.Get("kind"),
                        fmt::format("{}.kind = \"{}\": unknown figure kind (pipette plot draws {})",
                                    name, figure.kind, JoinChoices(kSweepFigureKinds)));
  }
  PIPETTE_ASSIGN_OR_RETURN(figure.out,
                           reader.String("out", fmt::format("{}-{}.png", spec.name, figure.kind)));
  PIPETTE_RETURN_IF_ERROR(RejectControlBytes(origin, reader.Get("out"), name + ".out", figure.out));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> x,
                           reader.FindString("x", Presence::kOptional, EmptyString::kAllowed));
  figure.x = x.value_or("");
  PIPETTE_RETURN_IF_ERROR(RejectControlBytes(origin, reader.Get("x"), name + ".x", figure.x));
  for (auto [key, field] :
       {std::pair{"colour_by", &figure.colour_by}, std::pair{"marker_by", &figure.marker_by}}) {
    PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> value,
                             reader.FindString(key, Presence::kOptional, EmptyString::kAllowed));
    *field = value.value_or("");
    PIPETTE_RETURN_IF_ERROR(RejectControlBytes(origin, reader.Get(key), name + "." + key, *field));
    if (!field->empty() && figure.kind != "compare") {
      return origin.Error(
          reader.Get(key),
          fmt::format("{}.{} = \"{}\": applies only to kind = \"compare\"", name, key, *field));
    }
  }
  if (!figure.colour_by.empty() && figure.colour_by != "none" &&
      figure.colour_by == figure.marker_by) {
    return origin.Error(
        reader.Get("marker_by"),
        fmt::format("{}.marker_by = \"{}\": already its colour_by; a figure encodes "
                    "two different keys (or \"none\")",
                    name, figure.marker_by));
  }
  PIPETTE_ASSIGN_OR_RETURN(
      const toml::table* where,
      reader.FindTable("where", Presence::kOptional, ", e.g. { schedule = \"1f1b\" }"));
  if (where != nullptr) PIPETTE_RETURN_IF_ERROR(ParseWhere(spec, origin, *where, name, figure));
  return Status::Ok();
}

// Reads the top-level scalars: name, description and command.
Status ReadHeader(const TomlTableReader& root, SweepSpec& spec) {
  PIPETTE_RETURN_IF_ERROR(
      root.RejectUnknownKeys(kTopLevelKeys, "unknown key '{key}' (a sweep spec has {expected})"));
  PIPETTE_ASSIGN_OR_RETURN(spec.name, root.String("name", spec.name));
  PIPETTE_RETURN_IF_ERROR(RejectControlBytes(root.origin(), root.Get("name"), "name", spec.name));
  if (spec.name.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{}: the file has no stem to name the experiment; set name = \"...\"", spec.path));
  }
  PIPETTE_ASSIGN_OR_RETURN(
      std::optional<std::string> description,
      root.FindString("description", Presence::kOptional, EmptyString::kAllowed));
  spec.description = description.value_or("");
  PIPETTE_ASSIGN_OR_RETURN(spec.command, root.String("command", spec.command));
  if (!Contains(kSweepCommands, spec.command)) {
    return root.Error(root.Get("command"),
                      fmt::format("command = \"{}\": a sweep runs {} (simulated points, or "
                                  "measured ones on a real engine under mpirun)",
                                  spec.command, JoinChoices(kSweepCommands)));
  }
  PIPETTE_ASSIGN_OR_RETURN(spec.predict, root.Bool("predict", false));
  if (spec.predict && spec.command != "train") {
    return root.Error(root.Get("predict"),
                      fmt::format("predict = true: only measured points (command = \"train\") "
                                  "have a prediction; this spec's command is \"{}\"",
                                  spec.command));
  }
  PIPETTE_ASSIGN_OR_RETURN(
      std::optional<std::string> calibration,
      root.FindString("calibration", Presence::kOptional, EmptyString::kRejected));
  spec.calibration = calibration.value_or("");
  if (!spec.calibration.empty() && !spec.predict) {
    return root.Error(root.Get("calibration"),
                      fmt::format("calibration = \"{}\": applies to predictions; set predict = "
                                  "true",
                                  Printable(spec.calibration)));
  }
  PIPETTE_RETURN_IF_ERROR(
      RejectControlBytes(root.origin(), root.Get("calibration"), "calibration", spec.calibration));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> fit,
                           root.FindString("fit", Presence::kOptional, EmptyString::kRejected));
  spec.fit = fit.value_or("");
  if (!spec.fit.empty() && !spec.predict) {
    return root.Error(
        root.Get("fit"),
        fmt::format("fit = \"{}\": prices predictions; set predict = true", Printable(spec.fit)));
  }
  return RejectControlBytes(root.origin(), root.Get("fit"), "fit", spec.fit);
}

// Reads [fixed]: one scalar per option.
Status ReadFixed(const TomlTableReader& root, SweepSpec& spec) {
  PIPETTE_ASSIGN_OR_RETURN(const toml::table* table,
                           root.FindTable("fixed", Presence::kOptional, " ([fixed])"));
  if (table == nullptr) return Status::Ok();
  for (const auto& [key, node] : InFileOrder(*table)) {
    PIPETTE_RETURN_IF_ERROR(CheckKey(root.origin(), *node, "[fixed]", key));
    if (node->is_array() || node->is_table()) {
      return root.Error(node, fmt::format("[fixed] {} = {}: must be one value (lists belong in "
                                          "[axes])",
                                          key, ShowToml(*node)));
    }
    PIPETTE_ASSIGN_OR_RETURN(SweepValue value, ToValue(root.origin(), *node, "[fixed] " + key));
    spec.fixed.push_back({key, std::move(value)});
  }
  return Status::Ok();
}

// Returns the keys of axis `name` ("pp,dp" links two), each an option name set nowhere else.
Result<std::vector<std::string>> AxisKeys(const TomlOrigin& origin, const SweepSpec& spec,
                                          const std::string& name, const toml::node& node) {
  std::vector<std::string> keys;
  for (std::size_t begin = 0; begin <= name.size();) {
    const std::size_t end = std::min(name.find(',', begin), name.size());
    keys.push_back(name.substr(begin, end - begin));
    begin = end + 1;
  }
  for (const std::string& key : keys) {
    PIPETTE_RETURN_IF_ERROR(CheckKey(origin, node, "[axes]", key));
    for (const SweepSetting& fixed : spec.fixed) {
      if (fixed.key == key) {
        return origin.Error(&node, fmt::format("[axes] {} = {}: '{}' is also in [fixed] (= {}); a "
                                               "key is either fixed or an axis",
                                               name, ShowToml(node), key, fixed.value.text));
      }
    }
    if (std::count(keys.begin(), keys.end(), key) > 1 || SetsKey(spec, key)) {
      return origin.Error(&node, fmt::format("[axes] {}: '{}' is in two axes; a key varies in one "
                                             "axis (vary keys together with \"{},...\" = [[...], "
                                             "...])",
                                             name, key, key));
    }
  }
  return keys;
}

// Reads [axes], then checks that they do not make too many points.
Status ReadAxes(const TomlTableReader& root, SweepSpec& spec) {
  PIPETTE_ASSIGN_OR_RETURN(const toml::table* table,
                           root.FindTable("axes", Presence::kOptional, " ([axes])"));
  if (table == nullptr) return Status::Ok();
  for (const auto& [name, node] : InFileOrder(*table)) {
    SweepAxis axis;
    PIPETTE_ASSIGN_OR_RETURN(axis.keys, AxisKeys(root.origin(), spec, name, *node));
    PIPETTE_RETURN_IF_ERROR(ParseAxisValues(root.origin(), *node, name, axis));
    spec.axes.push_back(std::move(axis));
  }
  std::size_t points = 1;
  for (const SweepAxis& axis : spec.axes) {
    points *= axis.values.size();
    if (points > kMaxPoints) {
      return Status::InvalidArgument(fmt::format(
          "{}: [axes] make more than {} points; split the study", spec.path, kMaxPoints));
    }
  }
  return Status::Ok();
}

// Reads [[figures]]: each draws its own file from at least one point (exactly one for a
// timeline).
Status ReadFigures(const TomlTableReader& root, SweepSpec& spec) {
  const toml::node* figures = root.Get("figures");
  if (figures == nullptr) return Status::Ok();
  const auto* list = figures->as_array();
  if (list == nullptr) {
    return root.Error(figures, fmt::format("figures = {}: must be a list of tables ([[figures]])",
                                           ShowToml(*figures)));
  }
  const std::vector<SweepPoint> all = ExpandPoints(spec);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::node& node = *list->get(i);
    SweepFigure figure;
    PIPETTE_RETURN_IF_ERROR(ParseFigure(spec, root.origin(), node, i, figure));
    for (const SweepFigure& other : spec.figures) {
      if (other.out == figure.out) {
        return root.Error(
            &node, fmt::format("figures[{}].out = \"{}\": another figure draws the same file", i,
                               figure.out));
      }
    }
    const auto selected = std::count_if(
        all.begin(), all.end(), [&](const SweepPoint& p) { return FigureSelects(figure, p); });
    if (selected == 0) {
      return root.Error(&node, fmt::format("figures[{}].where selects no point", i));
    }
    if (figure.kind == "timeline" && selected != 1) {
      return root.Error(&node,
                        fmt::format("figures[{}]: kind = \"timeline\" draws one run, but its where "
                                    "selects {} points; narrow where to one value per axis",
                                    i, selected));
    }
    spec.figures.push_back(std::move(figure));
  }
  return Status::Ok();
}

}  // namespace

Result<SweepSpec> ParseSweepSpec(std::string_view text, const std::string& path) {
  const TomlOrigin origin(path);
  PIPETTE_ASSIGN_OR_RETURN(const toml::table root, origin.Parse(text));
  SweepSpec spec;
  spec.path = path;
  spec.text = std::string(text);
  spec.name = std::filesystem::path(path).stem().string();
  const TomlTableReader reader(origin, root);
  PIPETTE_RETURN_IF_ERROR(ReadHeader(reader, spec));
  PIPETTE_RETURN_IF_ERROR(ReadFixed(reader, spec));
  PIPETTE_RETURN_IF_ERROR(ReadAxes(reader, spec));
  PIPETTE_RETURN_IF_ERROR(ReadFigures(reader, spec));
  return spec;
}

Result<SweepSpec> LoadSweepSpec(const std::string& path) {
  PIPETTE_ASSIGN_OR_RETURN(const std::string text,
                           ReadFileBounded(path, kMaxSpecBytes, "sweep spec"));
  return ParseSweepSpec(text, path);
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

int TrainProcesses(const SweepPoint& point) {
  constexpr std::int64_t kMaxCount = std::int64_t{1} << 20;
  auto count = [&](std::initializer_list<std::string_view> keys) -> std::int64_t {
    for (const SweepSetting& s : point.settings) {
      if (!Contains(keys, s.key) || s.value.kind != SweepValue::Kind::kInteger) continue;
      const std::int64_t n = std::strtoll(s.value.text.c_str(), nullptr, 10);
      return n >= 1 && n <= kMaxCount ? n : 1;
    }
    return 1;
  };
  const std::int64_t processes = count({"pp", "p"}) * count({"dp"});
  return processes <= kMaxCount ? static_cast<int>(processes) : 1;
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
    // An empty string leaves the option out: the command's default (`rank-speed = ["", "2=0.5"]`).
    if (s.value.kind == SweepValue::Kind::kString && s.value.text.empty()) continue;
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

}  // namespace pipette
