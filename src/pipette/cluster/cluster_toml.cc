#include "pipette/cluster/cluster_toml.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/common/bounded_file.h"
#include "pipette/common/split.h"
#include "pipette/common/toml_reader.h"
#include "pipette/model/dtype.h"

namespace pipette {
namespace {

constexpr std::uintmax_t kMaxClusterFileBytes = 1 << 20;
constexpr double kMaxMemoryGb = 1e6;  // keeps memory_gb * 1e9 inside an int64

constexpr std::string_view kRootKeys[] = {
    "base",     "name", "source",     "nodes",      "gpus_per_node", "nics_per_node",
    "topology", "gpu",  "intra_node", "inter_node", "node_groups",   "fabric"};
constexpr std::string_view kFabricKeys[] = {"levels",        "nodes_per_leaf",   "leaves_per_pod",
                                            "radix",         "oversubscription", "link_gb_per_s",
                                            "hop_latency_us"};
constexpr int kMaxRadix = 4096;
constexpr double kMaxOversubscription = 1024;
constexpr std::string_view kNodeGroupKeys[] = {"nodes", "base", "gpu"};
constexpr int kMaxNodeGroups = 64;
constexpr std::string_view kGpuKeys[] = {"name", "memory_gb", "hbm_tb_per_s", "tflops"};
constexpr std::string_view kLinkKeys[] = {"bandwidth_gb_per_s", "latency_us"};
constexpr std::string_view kSections[] = {"gpu", "intra_node", "inter_node"};
constexpr Topology kTopologies[] = {Topology::kFatTree, Topology::kSingleSwitch,
                                    Topology::kRailOptimised};

constexpr IntRange kCount{1, kMaxClusterGpus};
constexpr IntRange kGpusPerNode{1, kMaxGpusPerNode};
constexpr NumberRange kPositive{.min_exclusive = true};  // capacities
// The floors of cluster_spec.h in the file's units: TFLOP/s, TB/s, GB/s and microseconds.
constexpr NumberRange kTflops{.min = kMinFlops / 1e12,
                              .rule = "a finite number >= 0.001 (1 GFLOP/s)"};
constexpr NumberRange kHbmTbPerS{.min = kMinBandwidth / 1e12,
                                 .rule = "a finite number >= 1e-06 (1 MB/s)"};
constexpr NumberRange kLinkGbPerS{.min = kMinBandwidth / 1e9,
                                  .rule = "a finite number >= 0.001 (1 MB/s)"};
constexpr NumberRange kLatencyUs{.max = kMaxLinkLatency * 1e6};

// A reader of one table of a cluster file at `prefix` ("gpu."). Keys the format requires are
// read with Presence::kRequired unless `base` names a preset.
TomlTableReader SectionReader(const TomlOrigin& origin, const toml::table& table,
                              std::string prefix) {
  TomlTableReader reader(origin, table, std::move(prefix));
  reader.set_missing_message("{key} is missing (required unless `base` names a preset)");
  return reader;
}

// Reads [gpu] into `gpu`; absent keys keep their value (the base preset's).
Status ReadGpu(const TomlTableReader& reader, Presence need, GpuSpec& gpu) {
  PIPETTE_RETURN_IF_ERROR(reader.RejectUnknownKeys(kGpuKeys));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> name, reader.FindString("name", need));
  if (name) gpu.name = *name;

  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> memory_gb,
                           reader.FindNumber("memory_gb", kPositive, need));
  if (memory_gb) {
    if (*memory_gb > kMaxMemoryGb) {
      return reader.Error(reader.Get("memory_gb"),
                          fmt::format("gpu.memory_gb = {}: more than the limit of {} GB",
                                      *memory_gb, kMaxMemoryGb));
    }
    gpu.memory_bytes = std::llround(*memory_gb * 1e9);
  }
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> hbm,
                           reader.FindNumber("hbm_tb_per_s", kHbmTbPerS, need));
  if (hbm) gpu.hbm_bandwidth = *hbm * 1e12;

  PIPETTE_ASSIGN_OR_RETURN(const toml::table* tflops, reader.FindTable("tflops", need));
  if (tflops == nullptr) return Status::Ok();  // kept from the base preset
  if (tflops->empty() && need == Presence::kRequired) {
    return reader.Error(tflops,
                        "gpu.tflops is empty: list the dense peak TFLOP/s of at least one dtype");
  }
  const TomlTableReader peaks = SectionReader(reader.origin(), *tflops, "gpu.tflops.");
  for (const auto& [key, node] : InFileOrder(*tflops)) {
    Result<DType> dtype = ParseDType(key, "gpu.tflops");
    if (!dtype.ok()) {
      return peaks.Error(
          node, fmt::format("{} = {}: unknown dtype '{}' (expected fp32, bf16, fp16 or fp8)",
                            peaks.Path(key), ShowToml(*node), key));
    }
    PIPETTE_ASSIGN_OR_RETURN(const double value, peaks.Number(key, kTflops));
    gpu.peak_flops[*dtype] = value * 1e12;
  }
  return Status::Ok();
}

// Reads [intra_node] or [inter_node] into `link`.
Status ReadLink(const TomlTableReader& reader, Presence need, LinkSpec& link) {
  PIPETTE_RETURN_IF_ERROR(reader.RejectUnknownKeys(kLinkKeys));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> bandwidth,
                           reader.FindNumber("bandwidth_gb_per_s", kLinkGbPerS, need));
  if (bandwidth) link.bandwidth = *bandwidth * 1e9;
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> latency,
                           reader.FindNumber("latency_us", kLatencyUs, need));
  if (latency) link.latency = *latency * 1e-6;
  return Status::Ok();
}

// Reads `base`: the preset it names becomes `spec`. Returns that name, nullopt without one.
Result<std::optional<std::string>> ReadBase(const TomlTableReader& root, ClusterSpec& spec) {
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> base, root.FindString("base"));
  if (!base) return base;
  const ClusterSpec* preset = FindClusterPreset(*base);
  if (preset == nullptr) {
    return root.Error(root.Get("base"),
                      fmt::format("base = '{}': unknown preset (the presets are {})", *base,
                                  ClusterPresetNames()));
  }
  spec = *preset;
  return base;
}

// Reads name and source; `base` names the preset the file overrides, if any.
Status ReadNames(const TomlTableReader& root, const std::optional<std::string>& base,
                 ClusterSpec& spec) {
  const std::string& path = root.origin().path();
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> name, root.FindString("name"));
  spec.name = name ? *name : path;
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> source, root.FindString("source"));
  if (source) {
    spec.source = *source;
  } else if (base) {
    spec.source = fmt::format("preset {} overridden by cluster file '{}'; the preset's figures: {}",
                              *base, path, spec.source);
  } else {
    spec.source = fmt::format("cluster file '{}'", path);
  }
  return Status::Ok();
}

// Reads nodes, gpus_per_node, nics_per_node and topology.
Status ReadShape(const TomlTableReader& root, Presence need, ClusterSpec& spec) {
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::int64_t> nodes, root.FindInteger("nodes", kCount));
  if (nodes) spec.nodes = static_cast<int>(*nodes);
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::int64_t> gpus,
                           root.FindInteger("gpus_per_node", kGpusPerNode, need));
  if (gpus) spec.gpus_per_node = static_cast<int>(*gpus);
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::int64_t> nics,
                           root.FindInteger("nics_per_node", kGpusPerNode));
  if (nics) {
    spec.nics_per_node = static_cast<int>(*nics);
  } else if (need == Presence::kRequired) {
    spec.nics_per_node = spec.gpus_per_node;  // one NIC per GPU, as on DGX systems
  }
  std::vector<std::string_view> topologies;
  for (Topology t : kTopologies) topologies.push_back(TopologyName(t));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> topology,
                           root.FindChoice("topology", topologies, "topology"));
  for (Topology t : kTopologies) {
    if (topology && *topology == TopologyName(t)) spec.topology = t;
  }
  const std::int64_t gpus_total = std::int64_t{spec.nodes} * spec.gpus_per_node;
  if (gpus_total > kMaxClusterGpus) {
    return root.Error(nullptr,
                      fmt::format("nodes * gpus_per_node = {}*{} = {} GPUs: more than "
                                  "the limit of {}",
                                  spec.nodes, spec.gpus_per_node, gpus_total, kMaxClusterGpus));
  }
  return Status::Ok();
}

// Parses a node list "3", "0-3" or "0,2-3" of a cluster with `nodes` nodes into `out`
// (ascending, distinct). Returns the rule broken, empty when none.
std::string ParseNodeList(const std::string& text, int nodes, std::vector<int>& out) {
  std::vector<bool> seen(nodes, false);
  for (const std::string& item : SplitAt(text, ',')) {
    const std::size_t dash = item.find('-');
    int first = 0, last = 0;
    char* stop = nullptr;
    auto number = [&](const std::string& digits, int& value) {
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
          digits.size() > 9) {
        return false;
      }
      value = static_cast<int>(std::strtol(digits.c_str(), &stop, 10));
      return true;
    };
    if (!number(item.substr(0, dash), first) ||
        !number(dash == std::string::npos ? item : item.substr(dash + 1), last) || last < first) {
      return fmt::format("'{}' is not a node index or a range A-B (A <= B)", item);
    }
    if (last >= nodes) return fmt::format("node {} is outside 0..{}", last, nodes - 1);
    for (int n = first; n <= last; ++n) {
      if (seen[n]) return fmt::format("node {} is listed twice", n);
      seen[n] = true;
    }
  }
  for (int n = 0; n < nodes; ++n) {
    if (seen[n]) out.push_back(n);
  }
  return "";
}

// Reads one [[node_groups]] entry: its nodes and its GPU (a preset's, `base`, overridden by its
// [gpu] keys; without `base` every [gpu] key is required).
Status ReadNodeGroup(const TomlOrigin& origin, const toml::table& table, const std::string& prefix,
                     const ClusterSpec& spec, NodeGroup& group) {
  const TomlTableReader reader = SectionReader(origin, table, prefix);
  PIPETTE_RETURN_IF_ERROR(reader.RejectUnknownKeys(kNodeGroupKeys));
  PIPETTE_ASSIGN_OR_RETURN(const std::string nodes, reader.String("nodes"));
  if (const std::string rule = ParseNodeList(nodes, spec.nodes, group.nodes); !rule.empty()) {
    return reader.Error(reader.Get("nodes"),
                        fmt::format("{}nodes = \"{}\": {}", prefix, nodes, rule));
  }
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::string> base, reader.FindString("base"));
  if (base) {
    const ClusterSpec* preset = FindClusterPreset(*base);
    if (preset == nullptr) {
      return reader.Error(reader.Get("base"),
                          fmt::format("{}base = '{}': unknown preset (the presets are {})", prefix,
                                      *base, ClusterPresetNames()));
    }
    group.gpu = preset->gpu;
  }
  const Presence need = base ? Presence::kOptional : Presence::kRequired;
  PIPETTE_ASSIGN_OR_RETURN(const toml::table* gpu, reader.FindTable("gpu", need));
  if (gpu == nullptr) return Status::Ok();
  return ReadGpu(SectionReader(origin, *gpu, prefix + "gpu."), need, group.gpu);
}

// Reads [[node_groups]]: mixed GPU types, no node in two groups.
Status ReadNodeGroups(const TomlTableReader& root, ClusterSpec& spec) {
  const toml::node* node = root.Get("node_groups");
  if (node == nullptr) return Status::Ok();
  const toml::array* groups = node->as_array();
  if (groups == nullptr || groups->empty() || groups->size() > kMaxNodeGroups) {
    return root.Error(node, fmt::format("node_groups: must be an array of 1 to {} tables "
                                        "([[node_groups]] with nodes = \"0-3\" and a GPU)",
                                        kMaxNodeGroups));
  }
  std::vector<bool> taken(spec.nodes, false);
  for (std::size_t k = 0; k < groups->size(); ++k) {
    const toml::table* table = (*groups)[k].as_table();
    const std::string prefix = fmt::format("node_groups[{}].", k);
    if (table == nullptr) {
      return root.Error(&(*groups)[k], fmt::format("node_groups[{}]: must be a table", k));
    }
    NodeGroup group;
    PIPETTE_RETURN_IF_ERROR(ReadNodeGroup(root.origin(), *table, prefix, spec, group));
    for (int n : group.nodes) {
      if (taken[n]) {
        return root.Error(
            table->get("nodes"),
            fmt::format("{}nodes: node {} is already in an earlier group", prefix, n));
      }
      taken[n] = true;
    }
    spec.node_groups.push_back(std::move(group));
  }
  return Status::Ok();
}

// Parses "A:B" (A >= B > 0, finite) into A / B; nullopt when `text` is not such a ratio.
std::optional<double> ParseRatio(const std::string& text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  auto number = [](const std::string& digits) -> std::optional<double> {
    if (digits.empty() || digits.find_first_not_of("0123456789.") != std::string::npos ||
        digits.size() > 24) {
      return std::nullopt;
    }
    const double value = std::strtod(digits.c_str(), nullptr);
    if (!(value > 0) || !std::isfinite(value)) return std::nullopt;
    return value;
  };
  const std::optional<double> down = number(text.substr(0, colon));
  const std::optional<double> up = number(text.substr(colon + 1));
  if (!down || !up || *down < *up || *down / *up > kMaxOversubscription) return std::nullopt;
  return *down / *up;
}

// Reads fabric.oversubscription: one "A:B" string for every tier, or an array of one per tier
// (levels - 1 of them, bottom up).
Status ReadOversubscription(const TomlTableReader& reader, FabricSpec& fabric) {
  const toml::node* node = reader.Get("oversubscription");
  if (node == nullptr) {  // the base preset's, one per tier
    fabric.oversubscription.resize(fabric.levels - 1, 1.0);
    return Status::Ok();
  }
  const int tiers = fabric.levels - 1;
  const std::string rule = fmt::format(
      "must be a ratio \"A:B\" (downlink to uplink bandwidth, A >= B > 0, at most {:g}:1) or an "
      "array of {} such ratios, one per tier above the leaves (levels = {})",
      kMaxOversubscription, tiers, fabric.levels);
  std::vector<const toml::node*> items;
  if (const toml::array* array = node->as_array()) {
    for (const toml::node& item : *array) items.push_back(&item);
    if (static_cast<int>(items.size()) != tiers) items.clear();
  } else {
    items.assign(tiers, node);
  }
  std::vector<double> ratios;
  for (const toml::node* item : items) {
    const std::optional<std::string> text = item->value<std::string>();
    const std::optional<double> ratio = text ? ParseRatio(*text) : std::nullopt;
    if (!ratio) break;
    ratios.push_back(*ratio);
  }
  if (items.empty() || ratios.size() != items.size()) {
    return reader.Error(node,
                        fmt::format("fabric.oversubscription = {}: {}", ShowToml(*node), rule));
  }
  fabric.oversubscription = std::move(ratios);
  return Status::Ok();
}

// Reads [fabric] (fat-tree and rail-optimised only); absent keys keep their value.
Status ReadFabric(const TomlTableReader& root, ClusterSpec& spec) {
  PIPETTE_ASSIGN_OR_RETURN(const toml::table* table, root.FindTable("fabric"));
  if (table == nullptr) {
    spec.fabric.oversubscription.resize(spec.fabric.levels - 1, 1.0);
    return Status::Ok();
  }
  if (spec.topology == Topology::kSingleSwitch) {
    return root.Error(table,
                      "[fabric]: topology = 'single-switch' has no fabric tiers (a [fabric] "
                      "table needs topology = 'fat-tree' or 'rail-optimised')");
  }
  const TomlTableReader reader(root.origin(), *table, "fabric.");
  PIPETTE_RETURN_IF_ERROR(reader.RejectUnknownKeys(kFabricKeys));
  FabricSpec& f = spec.fabric;
  const IntRange levels = spec.topology == Topology::kFatTree ? IntRange{2, 3} : IntRange{2, 2};
  PIPETTE_ASSIGN_OR_RETURN(std::optional<std::int64_t> n, reader.FindInteger("levels", levels));
  if (n) f.levels = static_cast<int>(*n);
  PIPETTE_ASSIGN_OR_RETURN(n, reader.FindInteger("nodes_per_leaf", kCount));
  if (n) f.nodes_per_leaf = static_cast<int>(*n);
  PIPETTE_ASSIGN_OR_RETURN(n, reader.FindInteger("leaves_per_pod", kCount));
  if (n) f.leaves_per_pod = static_cast<int>(*n);
  PIPETTE_ASSIGN_OR_RETURN(n, reader.FindInteger("radix", IntRange{2, kMaxRadix}));
  if (n) f.radix = static_cast<int>(*n);
  PIPETTE_RETURN_IF_ERROR(ReadOversubscription(reader, f));
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> bandwidth,
                           reader.FindNumber("link_gb_per_s", kLinkGbPerS));
  if (bandwidth) f.link_bandwidth = *bandwidth * 1e9;
  PIPETTE_ASSIGN_OR_RETURN(std::optional<double> latency,
                           reader.FindNumber("hop_latency_us", kLatencyUs));
  if (latency) f.hop_latency = *latency * 1e-6;
  return Status::Ok();
}

Result<ClusterSpec> ReadCluster(const TomlOrigin& origin, const toml::table& table) {
  const TomlTableReader root = SectionReader(origin, table, "");
  ClusterSpec spec;
  // `base` first: it decides which keys are required.
  PIPETTE_ASSIGN_OR_RETURN(const std::optional<std::string> base, ReadBase(root, spec));
  const Presence need = base ? Presence::kOptional : Presence::kRequired;
  PIPETTE_RETURN_IF_ERROR(root.RejectUnknownKeys(kRootKeys));
  PIPETTE_RETURN_IF_ERROR(ReadNames(root, base, spec));
  PIPETTE_RETURN_IF_ERROR(ReadShape(root, need, spec));
  for (std::string_view section : kSections) {
    PIPETTE_ASSIGN_OR_RETURN(const toml::table* found, root.FindTable(section, need));
    if (found == nullptr) continue;  // kept from the base preset
    const TomlTableReader reader = SectionReader(origin, *found, fmt::format("{}.", section));
    if (section == "gpu") {
      PIPETTE_RETURN_IF_ERROR(ReadGpu(reader, need, spec.gpu));
    } else {
      LinkSpec& link = section == "intra_node" ? spec.intra_node : spec.inter_node;
      PIPETTE_RETURN_IF_ERROR(ReadLink(reader, need, link));
    }
  }
  PIPETTE_RETURN_IF_ERROR(ReadFabric(root, spec));
  PIPETTE_RETURN_IF_ERROR(ReadNodeGroups(root, spec));
  return spec;
}

}  // namespace

Result<ClusterSpec> ParseClusterToml(std::string_view text, const std::string& origin) {
  const TomlOrigin file(origin, fmt::format("cluster file '{}'", origin));
  PIPETTE_ASSIGN_OR_RETURN(const toml::table root, file.Parse(text));
  return ReadCluster(file, root);
}

Result<ClusterSpec> LoadClusterToml(const std::string& path) {
  PIPETTE_ASSIGN_OR_RETURN(
      const std::string text,
      ReadFileBounded(path, kMaxClusterFileBytes, "cluster file", MissingFile::kNotARegularFile));
  return ParseClusterToml(text, path);
}

namespace {

// A GPU as its [gpu] table.
toml::table GpuTable(const GpuSpec& gpu) {
  toml::table tflops;
  for (const auto& [dtype, flops] : gpu.peak_flops) tflops.insert(DTypeName(dtype), flops / 1e12);
  tflops.is_inline(true);
  return toml::table{{"name", gpu.name},
                     {"memory_gb", static_cast<double>(gpu.memory_bytes) / 1e9},
                     {"hbm_tb_per_s", gpu.hbm_bandwidth / 1e12},
                     {"tflops", std::move(tflops)}};
}

// The fabric as its [fabric] table.
toml::table FabricTable(const FabricSpec& f) {
  toml::array ratios;
  for (const double ratio : f.oversubscription) ratios.push_back(fmt::format("{}:1", ratio));
  toml::table table{{"levels", f.levels},
                    {"nodes_per_leaf", f.nodes_per_leaf},
                    {"leaves_per_pod", f.leaves_per_pod},
                    {"radix", f.radix},
                    {"oversubscription", std::move(ratios)},
                    {"hop_latency_us", f.hop_latency * 1e6}};
  if (f.link_bandwidth > 0) table.insert("link_gb_per_s", f.link_bandwidth / 1e9);
  return table;
}

}  // namespace

std::string FormatClusterToml(const ClusterSpec& spec) {
  const auto link = [](const LinkSpec& l) {
    return toml::table{{"bandwidth_gb_per_s", l.bandwidth / 1e9}, {"latency_us", l.latency * 1e6}};
  };
  const toml::table file{
      {"name", spec.name},
      {"source", spec.source},
      {"nodes", spec.nodes},
      {"gpus_per_node", spec.gpus_per_node},
      {"nics_per_node", spec.nics_per_node},
      {"topology", TopologyName(spec.topology)},
      {"gpu", GpuTable(spec.gpu)},
      {"intra_node", link(spec.intra_node)},
      {"inter_node", link(spec.inter_node)},
  };
  toml::table written = file;
  if (spec.topology != Topology::kSingleSwitch) written.insert("fabric", FabricTable(spec.fabric));
  if (!spec.node_groups.empty()) {
    toml::array groups;
    for (const NodeGroup& group : spec.node_groups) {
      std::string nodes;
      for (int n : group.nodes) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
      groups.push_back(toml::table{{"nodes", nodes}, {"gpu", GpuTable(group.gpu)}});
    }
    written.insert("node_groups", std::move(groups));
  }
  std::ostringstream out;
  out << written << "\n";
  return out.str();
}

}  // namespace pipette
