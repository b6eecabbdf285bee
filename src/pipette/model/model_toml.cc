#include "pipette/model/model_toml.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipette/common/bounded_file.h"
#include "pipette/common/toml_reader.h"
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

// Amounts of custom layers, per token.
constexpr NumberRange kFlopsPerToken{.max = kMaxFlopsPerToken, .rule = "a finite number >= 0"};
constexpr NumberRange kBytesPerToken{.max = kMaxBytesPerToken, .rule = "a finite number >= 0"};
constexpr IntRange kDimension{1, kMaxDimension};

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
      {"moe",
       {"hidden", "expert_ffn_hidden", "experts", "top_k"},
       {"shared_experts", "capacity_factor", "gated", "bias"}},
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

const LayerType& FindLayerType(std::string_view name) {
  return *std::find_if(LayerTypes().begin(), LayerTypes().end(),
                       [name](const LayerType& type) { return type.name == name; });
}

std::vector<std::string_view> LayerTypeNames() {
  std::vector<std::string_view> names;
  for (const LayerType& type : LayerTypes()) names.push_back(type.name);
  return names;
}

// Returns InvalidArgument "<origin>:<line>: layer '<name>': <message>" at the line of `at`.
Status LayerError(const TomlOrigin& origin, const toml::node& at, std::string_view name,
                  std::string_view message) {
  return origin.Error(&at, fmt::format("layer '{}': {}", name, message));
}

// Rejects keys that `type` does not know, and the absence of one it needs.
Status CheckKeys(const TomlTableReader& r, const LayerType& type) {
  std::vector<std::string_view> accepted = {"name", "type", "region", "inputs"};
  accepted.insert(accepted.end(), type.required.begin(), type.required.end());
  accepted.insert(accepted.end(), type.optional.begin(), type.optional.end());
  PIPETTE_RETURN_IF_ERROR(r.RejectUnknownKeys(
      accepted,
      fmt::format("unknown key '{{key}}' for type {} (expected {{expected}})", type.name)));
  for (std::string_view key : type.required) {
    if (r.Get(key) == nullptr) {
      return r.Error(nullptr, fmt::format("missing key '{}': a layer of type {} needs {}", key,
                                          type.name, JoinChoices(type.required, "and")));
    }
  }
  return Status::Ok();
}

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

Result<Layer> ReadAttention(const TomlTableReader& r, std::string name, const TokenBatch& tokens) {
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t hidden, r.Integer("hidden", kDimension));
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t heads, r.Integer("heads", {1, kMaxHeads}));
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t kv_heads,
                           r.Integer("kv_heads", {1, kMaxHeads}, heads));
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

Result<Layer> ReadCustom(const TomlTableReader& r, std::string name, const TokenBatch& tokens,
                         CustomDefaults& defaults) {
  PIPETTE_ASSIGN_OR_RETURN(const double fwd, r.Number("fwd_flops", kFlopsPerToken));
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t params, r.Integer("params", {0, kMaxCustomParams}));
  PIPETTE_ASSIGN_OR_RETURN(const double igrad, r.Number("igrad_flops", kFlopsPerToken, fwd));
  PIPETTE_ASSIGN_OR_RETURN(const double wgrad,
                           r.Number("wgrad_flops", kFlopsPerToken, params > 0 ? fwd : 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double activation, r.Number("activation_bytes", kBytesPerToken));
  PIPETTE_ASSIGN_OR_RETURN(const double output, r.Number("output_bytes", kBytesPerToken));
  PIPETTE_ASSIGN_OR_RETURN(const double recompute,
                           r.Number("activation_bytes_recompute", kBytesPerToken, 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double wgrad_input,
                           r.Number("wgrad_input_bytes", kBytesPerToken, 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double hbm, r.Number("hbm_bytes", kBytesPerToken, 0.0));
  PIPETTE_ASSIGN_OR_RETURN(const double allreduce,
                           r.Number("tp_allreduce_bytes", kBytesPerToken, 0.0));
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

Result<Layer> ReadMoe(const TomlTableReader& r, std::string name, std::int64_t hidden,
                      const TokenBatch& tokens) {
  MoeShape shape{.hidden = hidden};
  PIPETTE_ASSIGN_OR_RETURN(shape.expert_ffn, r.Integer("expert_ffn_hidden", kDimension));
  PIPETTE_ASSIGN_OR_RETURN(shape.experts, r.Integer("experts", {1, kMaxExperts}));
  PIPETTE_ASSIGN_OR_RETURN(shape.top_k, r.Integer("top_k", {1, kMaxExperts}));
  PIPETTE_ASSIGN_OR_RETURN(shape.shared_experts, r.Integer("shared_experts", {0, kMaxExperts}, 0));
  PIPETTE_ASSIGN_OR_RETURN(
      shape.capacity_factor,
      r.Number("capacity_factor",
               NumberRange{.min = 1, .max = kMaxCapacityFactor, .rule = "a number >= 1"}, 1.0));
  PIPETTE_ASSIGN_OR_RETURN(shape.gated, r.Bool("gated", false));
  PIPETTE_ASSIGN_OR_RETURN(shape.bias, r.Bool("bias", false));
  if (shape.top_k > shape.experts) {
    return r.Error(r.Get("top_k"),
                   fmt::format("top_k = {}: must be at most experts = {} (a token picks top_k of "
                               "the experts)",
                               shape.top_k, shape.experts));
  }
  return MoeLayer(std::move(name), shape, tokens);
}

// Reads the shape keys of `type` and returns the layer its formula gives.
Result<Layer> ReadShaped(const TomlTableReader& r, const LayerType& type, std::string name,
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
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t in, r.Integer("in", kDimension));
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t out, r.Integer("out", kDimension));
    PIPETTE_ASSIGN_OR_RETURN(const bool bias, r.Bool("bias", false));
    return LinearLayer(std::move(name), in, out, bias, tokens);
  }
  if (kind == "loss") {
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t vocab, r.Integer("vocab", kDimension));
    return LossLayer(std::move(name), vocab, tokens);
  }
  // The rest all have a hidden width.
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t hidden, r.Integer("hidden", kDimension));
  if (kind == "embedding") {
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t vocab, r.Integer("vocab", kDimension));
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t positions,
                             r.Integer("positions", {0, kMaxDimension}, 0));
    return EmbeddingLayer(std::move(name), vocab, hidden, positions, tokens);
  }
  if (kind == "mlp") {
    PIPETTE_ASSIGN_OR_RETURN(const std::int64_t ffn, r.Integer("ffn_hidden", kDimension));
    PIPETTE_ASSIGN_OR_RETURN(const bool gated, r.Bool("gated", false));
    PIPETTE_ASSIGN_OR_RETURN(const bool bias, r.Bool("bias", false));
    return MlpLayer(std::move(name), MlpShape{hidden, ffn, gated, bias}, tokens);
  }
  if (kind == "moe") return ReadMoe(r, std::move(name), hidden, tokens);
  if (kind == "norm") {
    PIPETTE_ASSIGN_OR_RETURN(const bool bias, r.Bool("bias", false));
    return NormLayer(std::move(name), hidden, bias, tokens);
  }
  // head
  PIPETTE_ASSIGN_OR_RETURN(const std::int64_t vocab, r.Integer("vocab", kDimension));
  PIPETTE_ASSIGN_OR_RETURN(const bool tied, r.Bool("tied", false));
  return HeadLayer(std::move(name), hidden, vocab, tied, tokens);
}

// Reads the top level: the model's name into `model`, and returns the [[layer]] tables.
Result<const toml::array*> ReadTopLevel(const TomlOrigin& origin, const toml::table& root,
                                        ModelGraph& model) {
  constexpr std::string_view kTopLevelKeys[] = {"name", "layer"};
  const TomlTableReader top(origin, root);
  PIPETTE_RETURN_IF_ERROR(top.RejectUnknownKeys(
      kTopLevelKeys, "unknown top-level key '{key}' (expected name and [[layer]] tables)"));
  PIPETTE_ASSIGN_OR_RETURN(
      model.name, top.String("name", std::filesystem::path(origin.path()).stem().string()));
  const toml::node* layers_node = root.get("layer");
  const toml::array* layers = layers_node != nullptr ? layers_node->as_array() : nullptr;
  if (layers_node != nullptr && layers == nullptr) {
    return origin.Error(layers_node,
                        "layer must be an array of tables: write each layer as [[layer]]");
  }
  if (layers == nullptr || layers->empty()) {
    return origin.Error(layers_node, "no [[layer]] tables: a model needs at least one layer");
  }
  if (layers->size() > kMaxLayersPerFile) {
    return origin.Error(layers_node, fmt::format("{} layers: more than the limit of {}",
                                                 layers->size(), kMaxLayersPerFile));
  }
  return layers;
}

// Reads the [[layer]] table number `index` (from 0); `index_of` maps the names of the layers
// before it to their indices, and gets this one's.
Result<Entry> ReadLayer(const TomlOrigin& origin, const toml::table& table, std::size_t index,
                        const TokenBatch& tokens,
                        std::map<std::string, std::size_t, std::less<>>& index_of) {
  TomlTableReader reader(origin, table);
  reader.set_context(fmt::format("layer #{}", index + 1));
  PIPETTE_ASSIGN_OR_RETURN(std::string name, reader.String("name"));
  reader.set_context(fmt::format("layer '{}'", name));
  if (auto [it, inserted] = index_of.emplace(name, index); !inserted) {
    return reader.Error(reader.Get("name"),
                        fmt::format("name = '{}': duplicate name (layer #{} has it already)", name,
                                    it->second + 1));
  }
  PIPETTE_ASSIGN_OR_RETURN(const std::string type_name,
                           reader.Choice("type", LayerTypeNames(), "layer type"));
  const LayerType& type = FindLayerType(type_name);
  PIPETTE_RETURN_IF_ERROR(CheckKeys(reader, type));
  Entry entry;
  entry.table = &table;
  PIPETTE_ASSIGN_OR_RETURN(entry.layer, ReadShaped(reader, type, name, tokens, entry));
  PIPETTE_ASSIGN_OR_RETURN(entry.layer.region, reader.String("region", "main"));
  PIPETTE_ASSIGN_OR_RETURN(entry.inputs,
                           reader.FindStringArray("inputs", "layer names, e.g. [\"block0.mlp\"]"));
  entry.inputs_node = reader.Get("inputs");
  return entry;
}

// Resolves every layer's inputs to producers, then fills the custom layers' defaults that depend
// on the bytes of their inputs.
Status ResolveInputs(const TomlOrigin& origin, std::vector<Entry>& entries) {
  std::map<std::string_view, std::size_t> index_of;
  for (std::size_t i = 0; i < entries.size(); ++i) index_of.emplace(entries[i].layer.name, i);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Entry& entry = entries[i];
    if (!entry.inputs) {
      if (i > 0) entry.producers.push_back(i - 1);
    } else {
      for (const std::string& input : *entry.inputs) {
        auto it = index_of.find(input);
        if (it == index_of.end()) {
          return LayerError(origin, *entry.inputs_node, entry.layer.name,
                            fmt::format("inputs = {}: no layer is named '{}'",
                                        ShowToml(*entry.inputs_node), input));
        }
        entry.producers.push_back(it->second);
      }
    }
    if (!entry.custom) continue;
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
  return Status::Ok();
}

// Returns the file indices of the layers in the graph's topological order (smallest file index
// first among ready layers, so the file's order survives where the inputs allow), or the cycle
// the inputs form.
Result<std::vector<LayerId>> OrderLayers(const TomlOrigin& origin,
                                         const std::vector<Entry>& entries) {
  ModelGraph flow;  // the data flow alone, with the file's indices as ids
  for (const Entry& entry : entries) {
    Layer vertex;
    vertex.name = entry.layer.name;
    flow.AddLayer(std::move(vertex));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (std::size_t p : entries[i].producers) flow.Connect(p, i, 0);
  }
  Result<std::vector<LayerId>> order = flow.TopologicalOrder();
  if (order.ok()) return order;
  const std::vector<LayerId> cycle = flow.FindCycle();
  std::string path;
  for (LayerId i : cycle) path += entries[i].layer.name + " -> ";
  path += entries[cycle.front()].layer.name;
  const Entry& at = entries[cycle.front()];
  return LayerError(
      origin, at.inputs_node != nullptr ? *at.inputs_node : *at.table, at.layer.name,
      fmt::format("the inputs form a cycle ({}): a model graph must be acyclic", path));
}

// blocks = the attention layers; heads and kv_heads = their gcd; hidden and vocab = those of the
// first layer (in file order) that has one; experts = the gcd of the moe layers' routed experts
// (so an ep that divides it divides every layer's).
ModelAttributes AttributesOf(const std::vector<Entry>& entries) {
  ModelAttributes attributes;
  for (const Entry& entry : entries) {
    const LayerShape& shape = entry.layer.shape;
    if (attributes.hidden == 0) attributes.hidden = static_cast<int>(shape.hidden);
    if (attributes.vocab == 0) attributes.vocab = static_cast<int>(shape.vocab);
    if (entry.layer.type == "attention") {
      ++attributes.blocks;
      attributes.heads = std::gcd(attributes.heads, static_cast<int>(shape.heads));
      attributes.kv_heads = std::gcd(attributes.kv_heads, static_cast<int>(shape.kv_heads));
    }
    if (entry.layer.type == "moe") {
      attributes.experts = std::gcd(attributes.experts, static_cast<int>(shape.experts));
    }
  }
  return attributes;
}

Result<ModelGraph> Build(const TomlOrigin& origin, const toml::table& root,
                         const Workload& workload) {
  ModelGraph model;
  model.workload = workload;
  PIPETTE_ASSIGN_OR_RETURN(const toml::array* layers, ReadTopLevel(origin, root, model));
  const TokenBatch tokens = TokensOf(workload);
  std::vector<Entry> entries;
  std::map<std::string, std::size_t, std::less<>> index_of;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const toml::node& node = *layers->get(i);
    if (!node.is_table()) {
      return origin.Error(&node, fmt::format("layer = {}: must be an array of tables ([[layer]])",
                                             ShowToml(*layers)));
    }
    PIPETTE_ASSIGN_OR_RETURN(Entry entry, ReadLayer(origin, *node.as_table(), i, tokens, index_of));
    entries.push_back(std::move(entry));
  }
  PIPETTE_RETURN_IF_ERROR(ResolveInputs(origin, entries));
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<LayerId> order, OrderLayers(origin, entries));
  model.attributes = AttributesOf(entries);
  std::vector<LayerId> id_of(entries.size());
  for (LayerId i : order) {
    id_of[i] = model.AddLayer(entries[i].layer);
    for (std::size_t p : entries[i].producers) {
      model.Connect(id_of[p], id_of[i], entries[p].layer.output_bytes);
    }
  }
  return model;
}

}  // namespace

double EstimateModelFileMemory(std::string_view text) {
  std::int64_t tables = 0, delimiters = 0, separators = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      ++delimiters;
    } else if (c == '{' || (c == '[' && i + 1 < text.size() && text[i + 1] == '[')) {
      ++tables;  // a layer written as a table or an inline table
      if (c == '[') ++i;
    } else if (c == ',' || c == '=') {
      ++separators;  // a value of an array or a key: one parsed node each
    }
  }
  const std::int64_t strings = delimiters / 2;
  return static_cast<double>(tables) * kModelFileBytesPerTable +
         static_cast<double>(strings) * kModelFileBytesPerString +
         static_cast<double>(std::max<std::int64_t>(separators - strings, 0)) *
             kModelFileBytesPerValue;
}

Result<ModelGraph> ParseModelToml(std::string_view text, const std::string& origin,
                                  const Workload& workload) {
  PIPETTE_RETURN_IF_ERROR(ValidateWorkload(workload).WithContext(origin));
  if (const double bytes = EstimateModelFileMemory(text); bytes > kMaxModelFileMemory) {
    return Status::InvalidArgument(fmt::format(
        "{}: reading it would take about {:.1f} GB of memory ({:g} KB per layer, {:g} bytes per "
        "string (name, type or input) and {:g} per other value), more than the {:g} GB a model "
        "file may take: a model graph needs a few inputs per layer, not thousands",
        origin, bytes / 1e9, kModelFileBytesPerTable / 1e3, kModelFileBytesPerString,
        kModelFileBytesPerValue, kMaxModelFileMemory / 1e9));
  }
  const TomlOrigin file(origin);
  PIPETTE_ASSIGN_OR_RETURN(const toml::table root, file.Parse(text));
  return Build(file, root, workload);
}

Result<ModelGraph> LoadModelToml(const std::string& path, const Workload& workload) {
  PIPETTE_ASSIGN_OR_RETURN(const std::string text,
                           ReadFileBounded(path, kMaxModelFileBytes, "model file"));
  return ParseModelToml(text, path, workload);
}

}  // namespace pipette
