#include "pipette/report/partition_report.h"

#include <fmt/core.h>

#include "pipette/common/build_info.h"

namespace pipette {
namespace {

std::string Gigabytes(double bytes) { return fmt::format("{:.2f}", bytes / 1e9); }

// Layer names of a stage, shortened to "first .. last (n)" when long.
std::string LayerSummary(const ModelGraph& model, const StageInfo& stage) {
  if (stage.layers.size() <= 3) {
    std::string out;
    for (LayerId id : stage.layers) out += (out.empty() ? "" : ",") + model.layer(id).name;
    return out;
  }
  return fmt::format("{}..{} ({})", model.layer(stage.layers.front()).name,
                     model.layer(stage.layers.back()).name, stage.layers.size());
}

}  // namespace

nlohmann::ordered_json PartitionJson(const ModelPlan& p, std::string_view schedule) {
  nlohmann::ordered_json json;
  json["model"] = p.plan.model;
  json["total_params"] = p.plan.total_params;
  auto& stages = json["stages"] = nlohmann::ordered_json::array();
  for (const StageInfo& s : p.plan.stages) {
    nlohmann::ordered_json stage;
    stage["index"] = s.index;
    stage["rank"] = s.rank;
    auto& layers = stage["layers"] = nlohmann::ordered_json::array();
    for (LayerId id : s.layers) layers.push_back(p.model.layer(id).name);
    stage["params"] = s.params;
    stage["fwd_flops"] = s.fwd_flops;
    stage["time_f_s"] = s.time_f;
    stage["time_i_s"] = s.time_i;
    stage["time_w_s"] = s.time_w;
    stage["activation_bytes"] = s.activation_bytes;
    stage["boundary_bytes"] = s.boundary_bytes;
    if (s.moe_layers > 0) {
      stage["moe_layers"] = s.moe_layers;
      stage["alltoall_bytes"] = s.alltoall_bytes;
      stage["time_alltoall_f_s"] = s.time_alltoall_f;
      stage["time_alltoall_b_s"] = s.time_alltoall_b;
    }
    stages.push_back(std::move(stage));
  }
  json["balance"] = p.plan.balance();
  json["rank_balance"] = p.plan.rank_balance();
  json["strategy"] = PartitionStrategyName(p.request.strategy);
  json["schedule"] = schedule;
  auto& mem = json["rank_memory_bytes"] = nlohmann::ordered_json::array();
  for (const MemoryBreakdown& m : p.rank_memory) mem.push_back(m.total());
  json["device_memory_bytes"] = p.cluster.gpu.memory_bytes;
  return json;
}

std::string PartitionText(const ModelPlan& p, std::string_view schedule) {
  std::string out;
  const ParallelConfig& c = p.config;
  const ClusterSpec& cluster = p.cluster;
  out += fmt::format("# pipette {} partition {} ({:.4g} B params) strategy={}\n", Version(),
                     p.plan.model, p.plan.total_params / 1e9,
                     PartitionStrategyName(p.request.strategy));
  out += fmt::format(
      "# pp={} v={} tp={} dp={} schedule={} m={} micro_batch_size={} seq_len={} dtype={} "
      "zero={} recompute={}\n",
      c.pp, c.v, c.tp, c.dp, schedule, c.microbatches, c.micro_batch_size, c.seq_len,
      DTypeName(c.dtype), c.zero_stage, c.recompute ? "yes" : "no");
  out += fmt::format(
      "# cluster {}: {} x {} {} ({:.4g} TFLOP/s {}, {:.0f} GB), roofline efficiency {}\n",
      cluster.name, cluster.nodes, cluster.gpus_per_node, cluster.gpu.name,
      cluster.gpu.peak_flops.at(c.dtype) / 1e12, DTypeName(c.dtype), cluster.gpu.memory_bytes / 1e9,
      p.efficiency);
  out += fmt::format(
      "#\n# stage rank region   params      fwd_flops   time_f   time_i   time_w  "
      "activation   boundary  layers\n");
  out += fmt::format(
      "#    -    - -        [M]         [GFLOP]       [ms]     [ms]     [ms]        "
      "[MB]       [MB]  -\n");
  for (const StageInfo& s : p.plan.stages) {
    out += fmt::format(
        "  {:>5} {:>4} {:<8} {:>9.1f} {:>13.1f} {:>8.3f} {:>8.3f} {:>8.3f} {:>11.1f} "
        "{:>10.2f}  {}\n",
        s.index, s.rank, s.region, s.params / 1e6, s.fwd_flops / 1e9, s.time_f * 1e3,
        s.time_i * 1e3, s.time_w * 1e3, s.activation_bytes / 1e6, s.boundary_bytes / 1e6,
        LayerSummary(p.model, s));
  }
  for (const StageInfo& s : p.plan.stages) {
    if (s.moe_layers == 0) continue;
    out += fmt::format(
        "# stage {}: {} MoE layers, all-to-all {:.2f} MB per GPU and phase, ep={}: {:.3f} ms per "
        "F, {:.3f} ms per I/B\n",
        s.index, s.moe_layers, s.alltoall_bytes / 1e6, c.ep, s.time_alltoall_f * 1e3,
        s.time_alltoall_b * 1e3);
  }
  out += fmt::format("#\nbalance       {:.4f}   (slowest stage F+I+W time / mean)\n",
                     p.plan.balance());
  out += fmt::format("rank_balance  {:.4f}   (slowest rank / mean)\n", p.plan.rank_balance());
  out += fmt::format("#\n# rank  weights  gradients  optimizer  activations    total   device\n");
  out += fmt::format("#    -     [GB]       [GB]       [GB]         [GB]     [GB]     [GB]\n");
  for (std::size_t r = 0; r < p.rank_memory.size(); ++r) {
    const MemoryBreakdown& m = p.rank_memory[r];
    out +=
        fmt::format("  {:>4} {:>8} {:>10} {:>10} {:>12} {:>8} {:>8}{}\n", r, Gigabytes(m.weights),
                    Gigabytes(m.gradients), Gigabytes(m.optimizer), Gigabytes(m.activations),
                    Gigabytes(m.total()), Gigabytes(cluster.gpu.memory_bytes),
                    m.total() > cluster.gpu.memory_bytes ? "  exceeds the device" : "");
  }
  return out;
}

}  // namespace pipette
