#include "pipette/cluster/host_cluster_toml.h"

#include <fmt/core.h>

#include "pipette/model/dtype.h"

namespace pipette {
namespace {

// `text` as a TOML basic string: quotes and backslashes escaped, control bytes as \uXXXX.
std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\u{:04X}", byte);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string Number(double value) { return fmt::format("{:.9g}", value); }

std::string LinkTable(std::string_view name, const LinkSpec& link) {
  return fmt::format(
      "[{}]               # the p2p fit: 1/beta, alpha\n"
      "bandwidth_gb_per_s = {}\n"
      "latency_us = {}\n\n",
      name, Number(link.bandwidth * 1e-9), Number(link.latency * 1e6));
}

}  // namespace

std::string FormatHostClusterToml(const ClusterSpec& spec, std::string_view comment) {
  std::string toml;
  std::size_t start = 0;
  while (start < comment.size()) {
    std::size_t end = comment.find('\n', start);
    if (end == std::string_view::npos) end = comment.size();
    toml += fmt::format("# {}\n", comment.substr(start, end - start));
    start = end + 1;
  }
  toml += fmt::format(
      "name = {}\nsource = {}\nnodes = {}\ngpus_per_node = {}\nnics_per_node = {}\n"
      "topology = {}\n\n",
      TomlString(spec.name), TomlString(spec.source), spec.nodes, spec.gpus_per_node,
      spec.nics_per_node, TomlString(TopologyName(spec.topology)));
  std::string tflops;
  for (const auto& [dtype, flops] : spec.gpu.peak_flops) {
    tflops += fmt::format("{}{} = {}", tflops.empty() ? "" : ", ", DTypeName(dtype),
                          Number(flops * 1e-12));
  }
  toml += fmt::format(
      "[gpu]\n"
      "name = {}\n"
      "memory_gb = {}          # RAM / cores\n"
      "hbm_tb_per_s = {}       # one rank's memcpy rate\n"
      "tflops = {{ {} }}  # one core's sgemm rate with every rank running\n\n",
      TomlString(spec.gpu.name), Number(static_cast<double>(spec.gpu.memory_bytes) * 1e-9),
      Number(spec.gpu.hbm_bandwidth * 1e-12), tflops);
  return toml + LinkTable("intra_node", spec.intra_node) + LinkTable("inter_node", spec.inter_node);
}

}  // namespace pipette
