#include "pipette/model/model_toml.h"

#include <fmt/core.h>
#include <toml++/toml.h>  // toml::parse, toml::table: the TOML reader

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <sstream>
#include <utility>
#include <vector>

#include "pipette/model/layer_formulas.h"

namespace pipette {
namespace {

constexpr std::uintmax_t kMaxModelFileBytes = std::uintmax_t{64} << 20;
// With at most 2^43 parameters per generated layer, 2^18 layers keep every sum below 2^62.
constexpr std::size_t kMaxLayersPerFile = std::size_t{1} << 18;
constexpr std::int64_t kMaxCustomParams = std::int64_t{1} << 40;
constexpr double kMaxFlopsPerToken = 1e18;
// Times kMaxTokensPerMicrobatch (2^24) stays below 2^62.
constexpr double kMaxBytesPerToken = static_cast<double>(std::int64_t{1} << 36);
// The bytes a custom layer's inputs may carry when its defaults are derived from them.
constexpr double kMaxInputBytes = static_cast<double>(std::int64_t{1} << 52);

// A layer type of the file format: the keys it needs and the keys it accepts besides them.
struct LayerType {
  std::string_view name;
  std::vector<std::string_view> required;
  std::vector<std::string_view> optional;
};

const std::vector<LayerType>& LayerTypes() {
  static const std::vector<LayerType> kTypes = {
      {"embedding", {"vocab", "hidden"}, {"positions"}},
      {"attention", {"hidden", "heads"}, {"kv_heads", "bias"}},
      {"mlp", {"hidden", "ffn_hidden"}, {"gated", "bias"}},
      {"norm", {"hidden"}, {"bias"}},
      {"head", {"hidden", "vocab"}, {"tied"}},
      {"loss", {"vocab"}, {}},
      {"linear", {"in", "out"}, {"bias"}},
      {"custom",
       {"fwd_flops", "params", "activation_bytes", "output_bytes"},
       {"igrad_flops", "wgrad_flops", "activation_bytes_recompute", "wgrad_input_bytes",
        "hbm_bytes", "tp_allreduce_bytes", "tp_sharded"}},
  };
  return kTypes;
}

const LayerType* FindLayerType(std::string_view name) {
  for (const LayerType& type : LayerTypes()) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

// "a, b or c" ("and" with `conjunction`).
std::string JoinWords(const std::vector<std::string_view>& words,
                      std::string_view conjunction = "or") {
  std::string text;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += (i + 1 == words.size()) ? fmt::format(" {} ", conjunction) : ", ";
    text += words[i];
  }
  return text;
}

// The value as TOML writes it (for messages about a wrong value).
std::string Show(const toml::node& node) {
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

// Returns InvalidArgument "<origin>:<line>: layer '<name>': <message>" at the line of `at`.
Status LayerError(const std::string& origin, const toml::node& at, std::string_view name,
                  std::string_view message) {
  return Status::InvalidArgument(
      fmt::format("{}:{}: layer '{}': {}", origin, at.source().begin.line, name, message));
}

// Reads one [[layer]] table. Every error names the origin and line, the layer, the key, the value
// and the rule.
class LayerReader {
 public:
  LayerReader(const std::string& origin, const toml::table& table, std::size_t index)
      : origin_(origin), table_(table), index_(index) {}

  void set_name(std::string name) { name_ = std::move(name); }
  const toml::node* Get(std::string_view key) const { return table_.get(key); }

  // Returns InvalidArgument "<origin>:<line>: layer '<name>': <message>", at the line of `at` (or
  // of the table).
  Status Error(const toml::node* at, std::string_view message) const {
    const toml::node& where = at != nullptr ? *at : table_;
    if (!name_.empty()) return LayerError(origin_, where, name_, message);
    return Status::InvalidArgument(fmt::format("{}:{}: layer #{}: {}", origin_,
                                               where.source().begin.line, index_ + 1, message));
  }

  // Rejects keys that `type` does not know, and the absence of one it needs.
  Status CheckKeys(const LayerType& type) const {
    std::vector<std::string_view> accepted = {"name", "type", "region", "inputs"};
    accepted.insert(accepted.end(), type.required.begin(), type.required.end());
    accepted.insert(accepted.end(), type.optional.begin(), type.optional.end());
    for (const auto& [key, node] : table_) {
      if (std::find(accepted.begin(), accepted.end(), key.str()) == accepted.end()) {
        return Error(&node, fmt::format("unknown key '{}' for type {} (expected {})", key.str(),
                                        type.name, JoinWords(accepted)));
      }
    }
    for (std::string_view key : type.required) {
      if (Get(key) == nullptr) {
        return Error(nullptr, fmt::format("missing key '{}': a layer of type {} needs {}", key,
                                          type.name, JoinWords(type.required, "and")));
      }
    }
    return Status::Ok();
  }

  // Returns the non-empty string `key`, or `fallback` when absent (an error without one).
  Result<std::string> String(std::string_view key, std::optional<std::string> fallback) const {
    const toml::node* node = Get(key);
    if (node == nullptr) {
      if (fallback) return *fallback;
      return Error(nullptr, fmt::format("missing key '{}'", key));
    }
    if (!node->is_string()) {
      return Error(node, fmt::format("{} = {}: must be a string", key, Show(*node)));
    }
    const std::string& value = node->as_string()->get();
    if (value.empty()) return Error(node, fmt::format("{} = '': must not be empty", key));
    return value;
  }

  // Returns the integer `key` in [min, max], or `fallback` when absent.
  Result<std::int64_t> Integer(std::string_view key, std::int64_t min, std::int64_t max,
                               std::optional<std::int64_t> fallback = std::nullopt) const {
    const toml::node* node = Get(key);
    if (node == nullptr) {
      if (fallback) return *fallback;
      return Error(nullptr, fmt::format("missing key '{}'", key));
    }
    if (!node->is_integer()) {
      return Error(node, fmt::format("{} = {}: must be an integer", key, Show(*node)));
    }
    const std::int64_t value = node->as_integer()->get();
    if (value < min) return Error(node, fmt::format("{} = {}: must be >= {}", key, value, min));
    if (value > max) {
      return Error(node, fmt::format("{} = {}: more than the limit of {}", key, value, max));
    }
    return value;
  }

  // Returns the boolean `key`, or `fallback` when absent.
  Result<bool> Bool(std::string_view key, bool fallback) const {
    const toml::node* node = Get(key);
    if (node == nullptr) return fallback;
    if (!node->is_boolean()) {
      return Error(node, fmt::format("{} = {}: must be true or false", key, Show(*node)));
    }
    return node->as_boolean()->get();
  }

  // Returns the finite number `key` (integer or float) in [0, max], or `fallback` when absent.
  Result<double> Number(std::string_view key, double max,
                        std::optional<double> fallback = std::nullopt) const {
    const toml::node* node = Get(key);
    if (node == nullptr) {
      if (fallback) return *fallback;
      return Error(nullptr, fmt::format("missing key '{}'", key));
    }
    double value = 0;
    if (node->is_integer()) {
      value = static_cast<double>(node->as_integer()->get());
    } else if (node->is_floating_point()) {
      value = node->as_floating_point()->get();
    } else {
      return Error(node, fmt::format("{} = {}: must be a number", key, Show(*node)));
    }
    if (!std::isfinite(value) || value < 0) {
      return Error(node, fmt::format("{} = {}: must be a finite number >= 0", key, Show(*node)));
    }
    if (value > max) {
      return Error(node,
                   fmt::format("{} = {}: more than the limit of {:g}", key, Show(*node), max));
    }
    return value;
  }

  // Returns the names listed by `inputs`, or nullopt when the key is absent.
  Result<std::optional<std::vector<std::string>>> Inputs() const {
    const toml::node* node = Get("inputs");
    if (node == nullptr) return std::optional<std::vector<std::string>>();
    const toml::array* array = node->as_array();
    if (array == nullptr) {
      return Error(node, fmt::format("inputs = {}: must be an array of layer names, e.g. "
                                     "[\"block0.mlp\"]",
                                     Show(*node)));
    }
    std::vector<std::string> names;
    for (const toml::node& element : *array) {
      if (!element.is_string() || element.as_string()->get().empty()) {
        return Error(&element,
                     fmt::format("inputs = {}: every element must be a layer name", Show(*node)));
      }
      const std::string& name = element.as_string()->get();
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        return Error(&element, fmt::format("inputs = {}: lists '{}' twice", Show(*node), name));
      }
      names.push_back(name);
    }
    return std::optional<std::vector<std::string>>(std::move(names));
  }

 private:
  const std::string& origin_;
  const toml::table& table_;
  std::size_t index_;
  std::string name_;
};

// A custom layer's defaults that depend on the bytes of its inputs.
struct CustomDefaults {
  bool recompute = false;    // activation_bytes_recompute = input bytes
  bool wgrad_input = false;  // wgrad_input_bytes = input bytes
  bool hbm = false;          // hbm_bytes += input bytes
};

// One layer read from the file, before it joins the graph.
struct Entry {
  const toml::table* table = nullptr;
  Layer layer;
  std::optional<std::vector<std::string>> inputs;  // nullopt: the previous layer
  const toml::node* inputs_node = nullptr;
  std::optional<CustomDefaults> custom;
  std::vector<std::size_t> producers;  // file indices, resolved from `inputs`
};

std::int64_t PerMicrobatch(double per_token, const TokenBatch& tokens) {
  return std::llround(per_token * static_cast<double>(tokens.tokens()));
}

Result<Layer> ReadAttention(const LayerReader& r, std::string name, const TokenBatch& tokens) {
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t hidden, r.Integer("hidden", 1, kMaxDimension));
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t heads, r.Integer("heads", 1, kMaxHeads));
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t kv_heads, r.Integer("kv_heads", 1, kMaxHeads, heads));
  PIPETTE_ASSIGN_OR_RETURN(const bool bias, r.Bool("bias", false));
  if (hidden % heads != 0) {
    return r.Error(r.Get("heads"), fmt::format("heads = {}: hidden = {} must be divisible by heads",
                                               heads, hidden));
  }
  if (heads % kv_heads != 0) {
    return r.Error(
        r.Get("kv_heads"),
        fmt::format("kv_heads = {}: heads = {} must be divisible by kv_heads", kv_heads, heads));
  }
  return AttentionLayer(std::move(name), AttentionShape{hidden, heads, kv_heads, bias}, tokens);
}

Result<Layer> ReadCustom(const LayerReader& r, std::string name, const TokenBatch& tokens,
                         CustomDefaults& defaults) {
  PIPETTE_ASSIGN_OR_RETURN(const double fwd, r.Number("fwd_flops", kMaxFlopsPerToken));
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t params, r.Integer("params", 0, kMaxCustomParams));
  PIPETTE_ASSIGN_OR_RETURN(const double igrad, r.Number("igrad_flops", kMaxFlopsPerToken, fwd));
  PIPETTE_ASSIGN_OR_RETURN(const double wgrad,
                           r.Number("wgrad_flops", kMaxFlopsPerToken, params > 0 ? fwd : 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double activation,
                           r.Number("activation_bytes", kMaxBytesPerToken));
  PIPETTE_ASSIGN_OR_RETURN(const double output, r.Number("output_bytes", kMaxBytesPerToken));
  PIPETTE_ASSIGN_OR_RETURN(const double recompute,
                           r.Number("activation_bytes_recompute", kMaxBytesPerToken, 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double wgrad_input,
                           r.Number("wgrad_input_bytes", kMaxBytesPerToken, 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double hbm, r.Number("hbm_bytes", kMaxBytesPerToken, 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double allreduce,
                           r.Number("tp_allreduce_bytes", kMaxBytesPerToken, 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const bool sharded, r.Bool("tp_sharded", false));

  const double t = static_cast<double>(tokens.tokens());
  Layer layer;
  layer.name = std::move(name);
  layer.type = "custom";
  layer.fwd_flops = fwd * t;
  layer.igrad_flops = igrad * t;
  layer.wgrad_flops = wgrad * t;
  layer.params = params;
  layer.activation_bytes = PerMicrobatch(activation, tokens);
  layer.activation_bytes_recompute = PerMicrobatch(recompute, tokens);
  layer.wgrad_input_bytes = PerMicrobatch(wgrad_input, tokens);
  layer.output_bytes = PerMicrobatch(output, tokens);
  layer.hbm_bytes = r.Get("hbm_bytes") != nullptr
                        ? PerMicrobatch(hbm, tokens)
                        : tokens.bytes * params + layer.output_bytes;  // + inputs, later
  layer.tp_allreduce_bytes = PerMicrobatch(allreduce, tokens);
  layer.tp_sharded = sharded;
  defaults.recompute = r.Get("activation_bytes_recompute") == nullptr;
  defaults.wgrad_input = r.Get("wgrad_input_bytes") == nullptr && wgrad > 0;
  defaults.hbm = r.Get("hbm_bytes") == nullptr;
  return layer;
}

// Reads the shape keys of `type` and returns the layer its formula gives.
Result<Layer> ReadShaped(const LayerReader& r, const LayerType& type, std::string name,
                         const TokenBatch& tokens, Entry& entry) {
  const std::string_view kind = type.name;
  if (kind == "attention") return ReadAttention(r, std::move(name), tokens);
  if (kind == "custom") {
    CustomDefaults defaults;
    PIPETTE_ASSIGN_OR_RETURN(Layer layer, ReadCustom(r, std::move(name), tokens, defaults));
    entry.custom = defaults;
    return layer;
  }
  if (kind == "linear") {
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t in, r.Integer("in", 1, kMaxDimension));
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t out, r.Integer("out", 1, kMaxDimension));
    PIPETTE_ASSIGN_OR_RETURN(const bool bias, r.Bool("bias", false));
    return LinearLayer(std::move(name), in, out, bias, tokens);
  }
  if (kind == "loss") {
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t vocab, r.Integer("vocab", 1, kMaxDimension));
    return LossLayer(std::move(name), vocab, tokens);
  }
  // The rest all have a hidden width.
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t hidden, r.Integer("hidden", 1, kMaxDimension));
  if (kind == "embedding") {
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t vocab, r.Integer("vocab", 1, kMaxDimension));
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t positions,
                             r.Integer("positions", 0, kMaxDimension, 0));
    return EmbeddingLayer(std::move(name), vocab, hidden, positions, tokens);
  }
  if (kind == "mlp") {
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t ffn, r.Integer("ffn_hidden", 1, kMaxDimension));
    PIPETTE_ASSIGN_OR_RETURN(const bool gated, r.Bool("gated", false));
    PIPETTE_ASSIGN_OR_RETURN(const bool bias, r.Bool("bias", false));
    return MlpLayer(std::move(name), MlpShape{hidden, ffn, gated, bias}, tokens);
  }
  if (kind == "norm") {
    PIPETTE_ASSIGN_OR_RETURN(const bool bias, r.Bool("bias", false));
    return NormLayer(std::move(name), hidden, bias, tokens);
  }
  // head
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t vocab, r.Integer("vocab", 1, kMaxDimension));
  PIPETTE_ASSIGN_OR_RETURN(const bool tied, r.Bool("tied", false));
  return HeadLayer(std::move(name), hidden, vocab, tied, tokens);
}

// Returns a cycle among the layers Kahn's algorithm could not order, as file indices in data-flow
// order starting from the one earliest in the file.
std::vector<std::size_t> FindCycle(const std::vector<Entry>& entries,
                                   const std::vector<bool>& ordered) {
  std::size_t v = 0;
  while (ordered[v]) ++v;
  // Walk upstream through unordered producers (an unordered layer has one) until a layer repeats:
  // the walk from its first visit on is a cycle, against the data flow.
  std::vector<std::size_t> walk;
  std::vector<std::size_t> position(entries.size(), entries.size());
  while (position[v] == entries.size()) {
    position[v] = walk.size();
    walk.push_back(v);
    for (std::size_t p : entries[v].producers) {
      if (!ordered[p]) {
        v = p;
        break;
      }
    }
  }
  std::vector<std::size_t> cycle(walk.rbegin(), walk.rend() - position[v]);
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

Result<ModelGraph> Build(const toml::table& root, const std::string& origin,
                         const Workload& workload) {
  auto error = [&origin](const toml::node* at, std::string_view message) {
    const auto line = at != nullptr ? at->source().begin.line : 1;
    return Status::InvalidArgument(fmt::format("{}:{}: {}", origin, line, message));
  };
  for (const auto& [key, node] : root) {
    if (key.str() != "name" && key.str() != "layer") {
      return error(&node, fmt::format("unknown top-level key '{}' (expected name and [[layer]] "
                                      "tables)",
                                      key.str()));
    }
  }
  ModelGraph model;
  model.workload = workload;
  model.name = std::filesystem::path(origin).stem().string();
  if (const toml::node* name = root.get("name")) {
    if (!name->is_string() || name->as_string()->get().empty()) {
      return error(name, fmt::format("name = {}: must be a non-empty string", Show(*name)));
    }
    model.name = name->as_string()->get();
  }
  const toml::node* layers_node = root.get("layer");
  const toml::array* layers = layers_node != nullptr ? layers_node->as_array() : nullptr;
  if (layers_node != nullptr && layers == nullptr) {
    return error(layers_node, "layer must be an array of tables: write each layer as [[layer]]");
  }
  if (layers == nullptr || layers->empty()) {
    return error(layers_node, "no [[layer]] tables: a model needs at least one layer");
  }
  if (layers->size() > kMaxLayersPerFile) {
    return error(layers_node, fmt::format("{} layers: more than the limit of {}", layers->size(),
                                          kMaxLayersPerFile));
  }

  // Read every layer.
  const TokenBatch tokens = TokensOf(workload);
  std::vector<Entry> entries;
  std::map<std::string, std::size_t, std::less<>> index_of;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const toml::node& node = *layers->get(i);
    if (!node.is_table()) {
      return error(&node, fmt::format("layer = {}: must be an array of tables ([[layer]])",
                                      Show(*layers_node)));
    }
    LayerReader reader(origin, *node.as_table(), i);
    PIPETTE_ASSIGN_OR_RETURN(std::string name, reader.String("name", std::nullopt));
    reader.set_name(name);
    if (auto [it, inserted] = index_of.emplace(name, i); !inserted) {
      return reader.Error(reader.Get("name"),
                          fmt::format("name = '{}': duplicate name (layer #{} has it already)",
                                      name, it->second + 1));
    }
    PIPETTE_ASSIGN_OR_RETURN(const std::string type_name, reader.String("type", std::nullopt));
    const LayerType* type = FindLayerType(type_name);
    if (type == nullptr) {
      std::vector<std::string_view> names;
      for (const LayerType& t : LayerTypes()) names.push_back(t.name);
      return reader.Error(reader.Get("type"), fmt::format("type = '{}': unknown layer type "
                                                          "(expected {})",
                                                          type_name, JoinWords(names)));
    }
    PIPETTE_RETURN_IF_ERROR(reader.CheckKeys(*type));
    Entry entry;
    entry.table = node.as_table();
    PIPETTE_ASSIGN_OR_RETURN(entry.layer, ReadShaped(reader, *type, name, tokens, entry));
    PIPETTE_ASSIGN_OR_RETURN(entry.layer.region, reader.String("region", "main"));
    PIPETTE_ASSIGN_OR_RETURN(entry.inputs, reader.Inputs());
    entry.inputs_node = reader.Get("inputs");
    entries.push_back(std::move(entry));
  }

  // Resolve the inputs, then fill the custom layers' input-dependent defaults.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Entry& entry = entries[i];
    if (!entry.inputs) {
      if (i > 0) entry.producers.push_back(i - 1);
    } else {
      for (const std::string& input : *entry.inputs) {
        auto it = index_of.find(input);
        if (it == index_of.end()) {
          return LayerError(
              origin, *entry.inputs_node, entry.layer.name,
              fmt::format("inputs = {}: no layer is named '{}'", Show(*entry.inputs_node), input));
        }
        entry.producers.push_back(it->second);
      }
    }
    if (entry.custom) {
      double input_bytes = 0;  // exact below 2^53; checked before it becomes an int64
      for (std::size_t p : entry.producers) input_bytes += entries[p].layer.output_bytes;
      if (input_bytes > kMaxInputBytes) {
        return LayerError(origin, *entry.table, entry.layer.name,
                          fmt::format("its inputs carry {:g} bytes per microbatch: more than the "
                                      "limit of 2^52",
                                      input_bytes));
      }
      const auto bytes = static_cast<std::int64_t>(input_bytes);
      if (entry.custom->recompute) entry.layer.activation_bytes_recompute = bytes;
      if (entry.custom->wgrad_input) entry.layer.wgrad_input_bytes = bytes;
      if (entry.custom->hbm) entry.layer.hbm_bytes += bytes;
    }
  }

  // Kahn's algorithm, smallest file index first, so the file's order survives where it can.
  std::vector<std::vector<std::size_t>> consumers(entries.size());
  std::vector<std::size_t> waiting(entries.size(), 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    waiting[i] = entries[i].producers.size();
    for (std::size_t p : entries[i].producers) consumers[p].push_back(i);
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> order;
  std::vector<bool> ordered(entries.size(), false);
  while (!ready.empty()) {
    const std::size_t v = ready.top();
    ready.pop();
    order.push_back(v);
    ordered[v] = true;
    for (std::size_t c : consumers[v]) {
      if (--waiting[c] == 0) ready.push(c);
    }
  }
  if (order.size() != entries.size()) {
    const std::vector<std::size_t> cycle = FindCycle(entries, ordered);
    std::string path;
    for (std::size_t i : cycle) path += entries[i].layer.name + " -> ";
    path += entries[cycle.front()].layer.name;
    const Entry& at = entries[cycle.front()];
    return LayerError(
        origin, at.inputs_node != nullptr ? *at.inputs_node : *at.table, at.layer.name,
        fmt::format("the inputs form a cycle ({}): a model graph must be acyclic", path));
  }

  // Attributes, in file order.
  ModelAttributes& attributes = model.attributes;
  for (const Entry& entry : entries) {
    const toml::table& table = *entry.table;
    const std::int64_t hidden = table["hidden"].value_or(std::int64_t{0});
    const std::int64_t vocab = table["vocab"].value_or(std::int64_t{0});
    if (attributes.hidden == 0) attributes.hidden = static_cast<int>(hidden);
    if (attributes.vocab == 0) attributes.vocab = static_cast<int>(vocab);
    if (entry.layer.type == "attention") {
      const std::int64_t heads = table["heads"].value_or(std::int64_t{0});
      const std::int64_t kv_heads = table["kv_heads"].value_or(heads);
      ++attributes.blocks;
      attributes.heads = std::gcd(attributes.heads, static_cast<int>(heads));
      attributes.kv_heads = std::gcd(attributes.kv_heads, static_cast<int>(kv_heads));
    }
  }

  std::vector<LayerId> id_of(entries.size());
  for (std::size_t i : order) {
    id_of[i] = model.AddLayer(entries[i].layer);
    for (std::size_t p : entries[i].producers) {
      model.Connect(id_of[p], id_of[i], entries[p].layer.output_bytes);
    }
  }
  return model;
}

}  // namespace

Result<ModelGraph> ParseModelToml(std::string_view text, const std::string& origin,
                                  const Workload& workload) {
  PIPETTE_RETURN_IF_ERROR(ValidateWorkload(workload).WithContext(origin));
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  return Build(root, origin, workload);
}

Result<ModelGraph> LoadModelToml(const std::string& path, const Workload& workload) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Status::NotFound(fmt::format("model file '{}': no such file", path));
  }
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::IoError(fmt::format("model file '{}': {}", path, ec.message()));
  if (size > kMaxModelFileBytes) {
    return Status::InvalidArgument(fmt::format(
        "model file '{}': {} bytes, more than the limit of {}", path, size, kMaxModelFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return Status::IoError(fmt::format("model file '{}': cannot be read", path));
  return ParseModelToml(text.str(), path, workload);
}

}  // namespace pipette
