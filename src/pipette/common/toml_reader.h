// The TOML toolkit: how every pipette file format written in TOML (model files, cluster files,
// sweep specs) parses its text and reads its keys, so that one kind of mistake gets one kind of
// message. A message names the place, the key (its dotted path), the value as TOML writes it and
// the rule broken: "m.toml:5: layer 'x': heads = 'four': must be an integer". Every mistake in a
// file is InvalidArgument.
//
//   TomlOrigin       the file a table came from and how messages name a place in it;
//   TomlTableReader  typed reads of one table's keys (ranges, required or optional with a
//                    default), and the rejection of keys the table does not have.
//
// A reader refers to its origin and table, which must outlive it. Readers are cheap values, and
// const: safe to use from several threads on one table.
//
// Example:
//   const TomlOrigin origin(path);
//   PIPETTE_ASSIGN_OR_RETURN(const toml::table root, origin.Parse(text));
//   const TomlTableReader reader(origin, root);
//   constexpr std::string_view kKeys[] = {"name", "nodes"};
//   PIPETTE_RETURN_IF_ERROR(reader.RejectUnknownKeys(kKeys));
//   PIPETTE_ASSIGN_OR_RETURN(const std::int64_t nodes, reader.Integer("nodes", {1, 4096}, 1));
#pragma once

#include <toml++/toml.h>  // toml::table, toml::node: the parsed document

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipette/common/status.h"

namespace pipette {

// Returns the value as TOML writes it, for messages: 'four', 3, 2.5, [ 8, 16 ], { bf16 = 989 }.
std::string ShowToml(const toml::node& node);

// Returns "a, b or c" ("a, b and c" with `conjunction` "and"); "a" for one choice.
std::string JoinChoices(std::span<const std::string_view> choices,
                        std::string_view conjunction = "or");

// Returns the entries of `table` in the order the file writes them (a toml::table iterates in key
// order).
std::vector<std::pair<std::string, const toml::node*>> InFileOrder(const toml::table& table);

// Where a TOML text came from, and how its messages name a place in it.
class TomlOrigin {
 public:
  // Messages "path:line: message"; syntax errors "path:line:column: description".
  explicit TomlOrigin(std::string path) : path_(std::move(path)) {}
  // Messages "label: message" without a line; syntax errors "label: line L, column C:
  // description" (cluster files: label "cluster file 'c.toml'").
  TomlOrigin(std::string path, std::string label)
      : path_(std::move(path)), label_(std::move(label)) {}

  const std::string& path() const { return path_; }

  // Parses `text`, or returns InvalidArgument naming the line and column of a syntax error.
  Result<toml::table> Parse(std::string_view text) const;
  // Returns InvalidArgument with `message` at the line of `at` (line 1 when null).
  Status Error(const toml::node* at, std::string_view message) const;

 private:
  std::string path_;
  std::string label_;  // empty: messages carry lines
};

// The integers a key accepts: [min, max].
struct IntRange {
  std::int64_t min = std::numeric_limits<std::int64_t>::min();
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
};

// The numbers (TOML integers or floats) a key accepts: finite, >= min (> min when min_exclusive)
// and <= max.
struct NumberRange {
  double min = 0;
  double max = std::numeric_limits<double>::max();
  bool min_exclusive = false;
  // The lower rule in the format's own words, for a value that is not finite or below min ("a
  // finite number >= 0"); empty: "a finite number", ">= min" or "> min".
  std::string_view rule = {};
};

// Whether an absent key is a mistake.
enum class Presence { kRequired, kOptional };

// Whether a string key may be "".
enum class EmptyString { kRejected, kAllowed };

class TomlTableReader {
 public:
  // Reads `table` of the document `origin` parsed. `prefix` is the table's dotted path with its
  // dot ("gpu.", "figures[0]."): messages name keys as the file's reader knows them.
  TomlTableReader(const TomlOrigin& origin, const toml::table& table, std::string prefix = {})
      : origin_(&origin), table_(&table), prefix_(std::move(prefix)) {}
  // The reader refers to both: temporaries would dangle.
  TomlTableReader(const TomlOrigin&&, const toml::table&, std::string = {}) = delete;
  TomlTableReader(const TomlOrigin&, const toml::table&&, std::string = {}) = delete;

  // Names what the table describes at the start of every message: "layer 'x'" gives
  // "m.toml:5: layer 'x': heads = 5: ...".
  void set_context(std::string context) { context_ = std::move(context); }
  // The message for an absent required key: a fmt format with the field {key}. Default
  // "missing key '{key}'".
  void set_missing_message(std::string message) { missing_message_ = std::move(message); }

  const toml::table& table() const { return *table_; }
  const TomlOrigin& origin() const { return *origin_; }
  // Returns the value of `key`, nullptr when absent.
  const toml::node* Get(std::string_view key) const { return table_->get(key); }
  // Returns `key` with the table's prefix: "gpu.memory_gb".
  std::string Path(std::string_view key) const;

  // Returns InvalidArgument with `message`, after the context, at the line of `at` (of the table
  // when null).
  Status Error(const toml::node* at, std::string_view message) const;
  // Returns the error for the required key `key`, which is absent.
  Status MissingKey(std::string_view key) const;
  // Rejects the first key (in file order) that is not in `allowed`, at its line. `message` is a
  // fmt format with the fields {key} (its dotted path) and {expected} (JoinChoices(allowed)).
  Status RejectUnknownKeys(
      std::span<const std::string_view> allowed,
      std::string_view message = "unknown key '{key}' (expected {expected})") const;

  // Typed reads. A value of another type, or outside its range, is an error naming the key, the
  // value and the rule. Each type has three forms:
  //   Integer(key, range)            required: an absent key is MissingKey(key);
  //   Integer(key, range, fallback)  optional: an absent key reads as `fallback`;
  //   FindInteger(key, range, need)  nullopt for an absent key (MissingKey when kRequired).

  // An integer in `range`.
  Result<std::optional<std::int64_t>> FindInteger(std::string_view key, IntRange range,
                                                  Presence need = Presence::kOptional) const;
  Result<std::int64_t> Integer(std::string_view key, IntRange range) const;
  Result<std::int64_t> Integer(std::string_view key, IntRange range, std::int64_t fallback) const;

  // A number (integer or float) in `range`.
  Result<std::optional<double>> FindNumber(std::string_view key, const NumberRange& range,
                                           Presence need = Presence::kOptional) const;
  Result<double> Number(std::string_view key, const NumberRange& range) const;
  Result<double> Number(std::string_view key, const NumberRange& range, double fallback) const;

  // true or false.
  Result<std::optional<bool>> FindBool(std::string_view key,
                                       Presence need = Presence::kOptional) const;
  Result<bool> Bool(std::string_view key) const;
  Result<bool> Bool(std::string_view key, bool fallback) const;

  // A string, non-empty unless `empty` allows "".
  Result<std::optional<std::string>> FindString(std::string_view key,
                                                Presence need = Presence::kOptional,
                                                EmptyString empty = EmptyString::kRejected) const;
  Result<std::string> String(std::string_view key) const;
  Result<std::string> String(std::string_view key, std::string fallback) const;

  // One of `choices`; `what` names them in the message ("type = 'conv': unknown layer type
  // (expected embedding, ... or custom)").
  Result<std::optional<std::string>> FindChoice(std::string_view key,
                                                std::span<const std::string_view> choices,
                                                std::string_view what,
                                                Presence need = Presence::kOptional) const;
  Result<std::string> Choice(std::string_view key, std::span<const std::string_view> choices,
                             std::string_view what) const;
  Result<std::string> Choice(std::string_view key, std::span<const std::string_view> choices,
                             std::string_view what, std::string fallback) const;

  // A sub-table (nullptr when absent and optional); `hint` follows "must be a table" in the
  // message (" ([fixed])").
  Result<const toml::table*> FindTable(std::string_view key, Presence need = Presence::kOptional,
                                       std::string_view hint = {}) const;

  // An array of distinct non-empty strings; `what` says what they are in the message ("must be an
  // array of layer names").
  Result<std::optional<std::vector<std::string>>> FindStringArray(
      std::string_view key, std::string_view what, Presence need = Presence::kOptional) const;

 private:
  const TomlOrigin* origin_;
  const toml::table* table_;
  std::string prefix_;
  std::string context_;
  std::string missing_message_ = "missing key '{key}'";
};

}  // namespace pipette
