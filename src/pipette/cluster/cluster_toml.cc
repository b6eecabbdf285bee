#include "pipette/cluster/cluster_toml.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/common/bounded_file.h"
#include "pipette/common/toml_reader.h"
#include "pipette/model/dtype.h"

namespace pipette {
namespace {

constexpr std::uintmax_t kMaxClusterFileBytes = 1 << 20;
constexpr double kMaxMemoryGb = 1e6;  // keeps memory_gb * 1e9 inside an int64

constexpr std::string_view kRootKeys[] = {"base",          "name",          "source",   "nodes",
                                          "gpus_per_node", "nics_per_node", "topology", "gpu",
                                          "intra_node",    "inter_node"};
constexpr std::string_view kGpuKeys[] = {"name", "memory_gb", "hbm_tb_per_s", "tflops"};
constexpr std::string_view kLinkKeys[] = {"bandwidth_gb_per_s", "latency_us"};
constexpr std::string_view kSections[] = {"gpu", "intra_node", "inter_node"};
constexpr Topology kTopologies[] = {Topology::kFatTree, Topology::kSingleSwitch};

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

std::string FormatClusterToml(const ClusterSpec& spec) {
  toml::table tflops;
  for (const auto& [dtype, flops] : spec.gpu.peak_flops) {
    tflops.insert(DTypeName(dtype), flops / 1e12);
  }
  tflops.is_inline(true);
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
      {"gpu", toml::table{{"name", spec.gpu.name},
                          {"memory_gb", static_cast<double>(spec.gpu.memory_bytes) / 1e9},
                          {"hbm_tb_per_s", spec.gpu.hbm_bandwidth / 1e12},
                          {"tflops", std::move(tflops)}}},
      {"intra_node", link(spec.intra_node)},
      {"inter_node", link(spec.inter_node)},
  };
  std::ostringstream out;
  out << file << "\n";
  return out.str();
}

}  // namespace pipette
