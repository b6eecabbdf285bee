#include "pipette/cluster/cluster_toml.h"

#include <fmt/core.h>
#include <toml++/toml.h>  // toml::parse, toml::table: the TOML reader

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/model/dtype.h"

namespace pipette {
namespace {

constexpr std::uintmax_t kMaxClusterFileBytes = 1 << 20;
constexpr double kMaxMemoryGb = 1e6;  // keeps memory_gb * 1e9 inside an int64

// "a, b or c".
std::string JoinOr(std::initializer_list<std::string_view> words) {
  std::string text;
  std::size_t i = 0;
  for (std::string_view word : words) {
    if (i > 0) text += (i + 1 == words.size()) ? " or " : ", ";
    text += word;
    ++i;
  }
  return text;
}

// The value as TOML writes it (for messages about a wrong type).
std::string Show(const toml::node& node) {
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

std::string Join(std::string_view prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : fmt::format("{}.{}", prefix, key);
}

// Reads one cluster file's tables. Every error names the file, the key's full dotted path, the
// value and the rule. `from_base` makes every key optional.
class ClusterFileReader {
 public:
  ClusterFileReader(std::string_view origin, bool from_base)
      : origin_(origin), from_base_(from_base) {}

  Status Error(const std::string& message) const {
    return Status::InvalidArgument(fmt::format("cluster file '{}': {}", origin_, message));
  }

  // Rejects keys of `table` (at `prefix`) that are not in `allowed`: catches typos in units.
  Status CheckKeys(const toml::table& table, std::string_view prefix,
                   std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, node] : table) {
      bool known = false;
      for (std::string_view name : allowed) known = known || key.str() == name;
      if (!known) {
        return Error(fmt::format("unknown key '{}' (expected {})", Join(prefix, key.str()),
                                 JoinOr(allowed)));
      }
    }
    return Status::Ok();
  }

  // Returns the sub-table `key`, nullptr when absent (an error when required).
  Result<const toml::table*> Table(const toml::table& parent, std::string_view prefix,
                                   std::string_view key, bool required) const {
    const toml::node* node = parent.get(key);
    const std::string path = Join(prefix, key);
    if (node == nullptr) {
      if (required && !from_base_) return Missing(path);
      return static_cast<const toml::table*>(nullptr);
    }
    if (!node->is_table()) return Error(fmt::format("{} = {}: must be a table", path, Show(*node)));
    return node->as_table();
  }

  // Returns the non-empty string `key`, nullopt when absent (an error when required).
  Result<std::optional<std::string>> String(const toml::table& table, std::string_view prefix,
                                            std::string_view key, bool required) const {
    const toml::node* node = table.get(key);
    const std::string path = Join(prefix, key);
    if (node == nullptr) return Absent<std::string>(path, required);
    if (!node->is_string()) {
      return Error(fmt::format("{} = {}: must be a string", path, Show(*node)));
    }
    const std::string& value = node->as_string()->get();
    if (value.empty()) return Error(fmt::format("{} = '': must not be empty", path));
    return std::optional<std::string>(value);
  }

  // Returns the integer `key` in [1, kMaxClusterGpus], nullopt when absent.
  Result<std::optional<int>> Count(const toml::table& table, std::string_view key,
                                   bool required) const {
    const toml::node* node = table.get(key);
    const std::string path(key);
    if (node == nullptr) return Absent<int>(path, required);
    if (!node->is_integer()) {
      return Error(fmt::format("{} = {}: must be an integer", path, Show(*node)));
    }
    const std::int64_t value = node->as_integer()->get();
    if (value < 1) return Error(fmt::format("{} = {}: must be >= 1", path, value));
    if (value > kMaxClusterGpus) {
      return Error(fmt::format("{} = {}: more than the limit of {}", path, value, kMaxClusterGpus));
    }
    return std::optional<int>(static_cast<int>(value));
  }

  // Returns the finite number `key` (integer or float), > 0 or, with `zero_ok`, >= 0; nullopt
  // when absent.
  Result<std::optional<double>> Number(const toml::table& table, std::string_view prefix,
                                       std::string_view key, bool required, bool zero_ok) const {
    const toml::node* node = table.get(key);
    const std::string path = Join(prefix, key);
    if (node == nullptr) return Absent<double>(path, required);
    double value = 0;
    if (node->is_integer()) {
      value = static_cast<double>(node->as_integer()->get());
    } else if (node->is_floating_point()) {
      value = node->as_floating_point()->get();
    } else {
      return Error(fmt::format("{} = {}: must be a number", path, Show(*node)));
    }
    if (!std::isfinite(value)) {
      return Error(fmt::format("{} = {}: must be a finite number", path, Show(*node)));
    }
    if (zero_ok && value < 0) return Error(fmt::format("{} = {}: must be >= 0", path, Show(*node)));
    if (!zero_ok && value <= 0)
      return Error(fmt::format("{} = {}: must be > 0", path, Show(*node)));
    return std::optional<double>(value);
  }

 private:
  Status Missing(const std::string& path) const {
    return Error(fmt::format("{} is missing (required unless `base` names a preset)", path));
  }

  template <typename T>
  Result<std::optional<T>> Absent(const std::string& path, bool required) const {
    if (required && !from_base_) return Missing(path);
    return std::optional<T>();
  }

  std::string_view origin_;
  bool from_base_;
};

Result<Topology> ParseTopology(const ClusterFileReader& reader, const std::string& text) {
  for (Topology t : {Topology::kFatTree, Topology::kSingleSwitch}) {
    if (text == TopologyName(t)) return t;
  }
  return reader.Error(
      fmt::format("topology = '{}': unknown topology (expected fat-tree or single-switch)", text));
}

// Reads [gpu] into `gpu`; absent keys keep their value (the base preset's).
Status ReadGpu(const ClusterFileReader& reader, const toml::table& table, bool from_base,
               GpuSpec& gpu) {
  PIPETTE_RETURN_IF_ERROR(
      reader.CheckKeys(table, "gpu", {"name", "memory_gb", "hbm_tb_per_s", "tflops"}));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> name,
                           reader.String(table, "gpu", "name", /*required=*/true));
  if (name) gpu.name = *name;

  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> memory_gb,
                           reader.Number(table, "gpu", "memory_gb", true, /*zero_ok=*/false));
  if (memory_gb) {
    if (*memory_gb > kMaxMemoryGb) {
      return reader.Error(fmt::format("gpu.memory_gb = {}: more than the limit of {} GB",
                                      *memory_gb, kMaxMemoryGb));
    }
    gpu.memory_bytes = std::llround(*memory_gb * 1e9);
  }
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> hbm,
                           reader.Number(table, "gpu", "hbm_tb_per_s", true, false));
  if (hbm) gpu.hbm_bandwidth = *hbm * 1e12;

  PIPETTE_ASSIGN_OR_RETURN(const toml::table* tflops, reader.Table(table, "gpu", "tflops", true));
  if (tflops == nullptr) return Status::Ok();  // kept from the base preset
  if (tflops->empty() && !from_base) {
    return reader.Error("gpu.tflops is empty: list the dense peak TFLOP/s of at least one dtype");
  }
  for (const auto& [key, node] : *tflops) {
    Result<DType> dtype = ParseDType(key.str(), "gpu.tflops");
    if (!dtype.ok()) {
      return reader.Error(
          fmt::format("gpu.tflops.{} = {}: unknown dtype '{}' (expected fp32, bf16, fp16 or fp8)",
                      key.str(), Show(node), key.str()));
    }
    PIPETTE_ASSIGN_OR_RETURN(std::optional<double> value,
                             reader.Number(*tflops, "gpu.tflops", key.str(), true, false));
    gpu.peak_flops[*dtype] = *value * 1e12;
  }
  return Status::Ok();
}

// Reads [intra_node] or [inter_node] into `link`.
Status ReadLink(const ClusterFileReader& reader, const toml::table& table, std::string_view prefix,
                LinkSpec& link) {
  PIPETTE_RETURN_IF_ERROR(reader.CheckKeys(table, prefix, {"bandwidth_gb_per_s", "latency_us"}));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> bandwidth,
                           reader.Number(table, prefix, "bandwidth_gb_per_s", true, false));
  if (bandwidth) link.bandwidth = *bandwidth * 1e9;
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> latency,
                           reader.Number(table, prefix, "latency_us", true, /*zero_ok=*/true));
  if (latency) link.latency = *latency * 1e-6;
  return Status::Ok();
}

Result<ClusterSpec> ReadCluster(const toml::table& root, const std::string& origin) {
  // `base` first: it decides which keys are required.
  ClusterSpec spec;
  const ClusterFileReader probe(origin, /*from_base=*/true);
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> base, probe.String(root, "", "base", false));
  if (base) {
    const ClusterSpec* preset = FindClusterPreset(*base);
    if (preset == nullptr) {
      return probe.Error(fmt::format("base = '{}': unknown preset (the presets are {})", *base,
                                     ClusterPresetNames()));
    }
    spec = *preset;
  }
  const bool from_base = base.has_value();
  const ClusterFileReader reader(origin, from_base);
  PIPETTE_RETURN_IF_ERROR(
      reader.CheckKeys(root, "",
                       {"base", "name", "source", "nodes", "gpus_per_node", "nics_per_node",
                        "topology", "gpu", "intra_node", "inter_node"}));

  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> name, reader.String(root, "", "name", false));
  spec.name = name ? *name : origin;
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> source,
                           reader.String(root, "", "source", false));
  if (source) {
    spec.source = *source;
  } else if (from_base) {
    spec.source = fmt::format("preset {} overridden by cluster file '{}'; the preset's figures: {}",
                              *base, origin, spec.source);
  } else {
    spec.source = fmt::format("cluster file '{}'", origin);
  }

  PIPETTE_ASSIGN_OR_RETURN(std::optional<int> nodes, reader.Count(root, "nodes", false));
  if (nodes) spec.nodes = *nodes;
  PIPETTE_ASSIGN_OR_RETURN(std::optional<int> gpus, reader.Count(root, "gpus_per_node", true));
  if (gpus) spec.gpus_per_node = *gpus;
  PIPETTE_ASSIGN_OR_RETURN(std::optional<int> nics, reader.Count(root, "nics_per_node", false));
  if (nics) {
    spec.nics_per_node = *nics;
  } else if (!from_base) {
    spec.nics_per_node = spec.gpus_per_node;  // one NIC per GPU, as on DGX systems
  }
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> topology,
                           reader.String(root, "", "topology", false));
  if (topology) {
    PIPETTE_ASSIGN_OR_RETURN(spec.topology, ParseTopology(reader, *topology));
  }
  const std::int64_t gpus_total = std::int64_t{spec.nodes} * spec.gpus_per_node;
  if (gpus_total > kMaxClusterGpus) {
    return reader.Error(
        fmt::format("nodes * gpus_per_node = {}*{} = {} GPUs: more than the limit of {}",
                    spec.nodes, spec.gpus_per_node, gpus_total, kMaxClusterGpus));
  }

  const std::initializer_list<std::string_view> kSections = {"gpu", "intra_node", "inter_node"};
  for (std::string_view section : kSections) {
    PIPETTE_ASSIGN_OR_RETURN(const toml::table* table, reader.Table(root, "", section, true));
    if (table == nullptr) continue;  // kept from the base preset
    if (section == "gpu") {
      PIPETTE_RETURN_IF_ERROR(ReadGpu(reader, *table, from_base, spec.gpu));
    } else {
      LinkSpec& link = section == "intra_node" ? spec.intra_node : spec.inter_node;
      PIPETTE_RETURN_IF_ERROR(ReadLink(reader, *table, section, link));
    }
  }
  return spec;
}

}  // namespace

Result<ClusterSpec> ParseClusterToml(std::string_view text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& error) {
    return Status::InvalidArgument(fmt::format("cluster file '{}': line {}, column {}: {}", origin,
                                               error.source().begin.line,
                                               error.source().begin.column, error.description()));
  }
  return ReadCluster(root, origin);
}

Result<ClusterSpec> LoadClusterToml(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return Status::NotFound(
        fmt::format("cluster file '{}': not a regular file (or it does not exist)", path));
  }
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error || size > kMaxClusterFileBytes) {
    return Status::InvalidArgument(
        fmt::format("cluster file '{}': {} bytes, more than the limit of {}", path, size,
                    kMaxClusterFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cluster file '{}': cannot open the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError(fmt::format("cluster file '{}': read failed", path));
  return ParseClusterToml(text.str(), path);
}

}  // namespace pipette
