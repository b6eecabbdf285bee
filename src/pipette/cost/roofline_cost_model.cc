#include "pipette/cost/roofline_cost_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "pipette/cost/collectives.h"

namespace pipette {

namespace {

// Returns InvalidArgument "<what> = <value> <unit>: must be a finite number >= <floor> <unit>"
// unless value is finite and >= floor; `scale` converts bytes/s or FLOP/s to the unit shown.
Status CheckFloor(std::string_view what, double value, double floor, double scale,
                  std::string_view unit) {
  if (std::isfinite(value) && value >= floor) return Status::Ok();
  return Status::InvalidArgument(fmt::format("{} = {:g} {}: must be a finite number >= {:g} {}",
                                             what, value / scale, unit, floor / scale, unit));
}

Status CheckInputs(const ClusterSpec& cluster, const ParallelConfig& config, double peak,
                   const RooflineOptions& options) {
  const std::string where = fmt::format("cluster '{}'", cluster.name);
  PIPETTE_RETURN_IF_ERROR(
      CheckFloor(fmt::format("{}: gpu.tflops.{}", where, DTypeName(config.dtype)), peak, kMinFlops,
                 1e12, "TFLOP/s"));
  for (const auto& [key, value] : {std::pair{"--efficiency", options.compute_efficiency},
                                   std::pair{"memory efficiency", options.memory_efficiency}}) {
    if (!(value > 0 && value <= 1)) {
      return Status::InvalidArgument(fmt::format("{} = {}: must lie in (0, 1]", key, value));
    }
  }
  PIPETTE_RETURN_IF_ERROR(CheckFloor(fmt::format("{}: gpu.hbm_tb_per_s", where),
                                     cluster.gpu.hbm_bandwidth, kMinBandwidth, 1e12, "TB/s"));
  if (config.tp == 1) return Status::Ok();
  PIPETTE_RETURN_IF_ERROR(
      CheckFloor(fmt::format("{}: intra_node.bandwidth_gb_per_s (for --tp = {})", where, config.tp),
                 cluster.intra_node.bandwidth, kMinBandwidth, 1e9, "GB/s"));
  const double latency = cluster.intra_node.latency;
  if (!(latency >= 0 && latency <= kMaxLinkLatency)) {
    return Status::InvalidArgument(
        fmt::format("{}: intra_node.latency_us = {:g}: must be a number in [0, {:g}]", where,
                    latency * 1e6, kMaxLinkLatency * 1e6));
  }
  return Status::Ok();
}

}  // namespace

Result<RooflineCostModel> RooflineCostModel::Make(const ClusterSpec& cluster,
                                                  const ParallelConfig& config,
                                                  RooflineOptions options) {
  const auto peak = cluster.gpu.peak_flops.find(config.dtype);
  if (peak == cluster.gpu.peak_flops.end()) {
    return Status::InvalidArgument(
        fmt::format("--dtype = {}: cluster '{}' ({}) has no peak FLOP/s "
                    "for it",
                    DTypeName(config.dtype), cluster.name, cluster.gpu.name));
  }
  PIPETTE_RETURN_IF_ERROR(CheckInputs(cluster, config, peak->second, options));
  return RooflineCostModel(peak->second, cluster.gpu.hbm_bandwidth, cluster.intra_node, config.tp,
                           options,
                           fmt::format("{:g} TFLOP/s {} on cluster '{}'", peak->second / 1e12,
                                       DTypeName(config.dtype), cluster.name));
}

double RooflineCostModel::RingAllReduceSeconds(double bytes, int ranks) const {
  return pipette::RingAllReduceSeconds(ranks, bytes, link_);
}

LayerTimes RooflineCostModel::Times(const Layer& layer) const {
  const double shards = layer.tp_sharded ? tp_ : 1;
  const double bytes_time =
      static_cast<double>(layer.hbm_bytes) / shards / (hbm_ * options_.memory_efficiency);
  // A pass without FLOPs (e.g. the input gradient of an embedding, whose input is token ids) does
  // not run at all.
  auto roofline = [&](double flops) {
    if (flops <= 0) return 0.0;
    return std::max(flops / shards / (flops_ * options_.compute_efficiency), bytes_time);
  };
  const double collective =
      layer.tp_allreduce_bytes > 0 ? RingAllReduceSeconds(layer.tp_allreduce_bytes, tp_) : 0;
  LayerTimes t;
  t.f = roofline(layer.fwd_flops) + (layer.fwd_flops > 0 ? collective : 0);
  t.i = roofline(layer.igrad_flops) + (layer.igrad_flops > 0 ? collective : 0);
  t.w = roofline(layer.wgrad_flops);
  return t;
}

std::string RooflineCostModel::CauseOf(const Layer& layer) const {
  const double shards = layer.tp_sharded ? tp_ : 1;
  const double flops = std::max({layer.fwd_flops, layer.igrad_flops, layer.wgrad_flops});
  const double compute = flops / shards / (flops_ * options_.compute_efficiency);
  const double memory =
      static_cast<double>(layer.hbm_bytes) / shards / (hbm_ * options_.memory_efficiency);
  const double collective =
      layer.tp_allreduce_bytes > 0 ? RingAllReduceSeconds(layer.tp_allreduce_bytes, tp_) : 0;
  const std::string of_layer = fmt::format("layer '{}': {:.3g} FLOPs, {:.3g} HBM bytes", layer.name,
                                           flops, static_cast<double>(layer.hbm_bytes));
  if (collective > compute && collective > memory) {
    return fmt::format("--tp = {} over {:g} GB/s, {:g} us intra_node links ({}; {})", tp_,
                       link_.bandwidth / 1e9, link_.latency * 1e6, hardware_, of_layer);
  }
  if (memory > compute) {
    return fmt::format("memory efficiency = {} of {:g} TB/s HBM ({}; {})",
                       options_.memory_efficiency, hbm_ / 1e12, hardware_, of_layer);
  }
  return fmt::format("--efficiency = {} (of {}; {})", options_.compute_efficiency, hardware_,
                     of_layer);
}

}  // namespace pipette
