#include "pipette/cost/roofline_cost_model.h"

#include <fmt/core.h>

#include <algorithm>

#include "pipette/cost/collectives.h"

namespace pipette {

Result<RooflineCostModel> RooflineCostModel::Make(const ClusterSpec& cluster,
                                                  const ParallelConfig& config,
                                                  RooflineOptions options) {
  const auto peak = cluster.gpu.peak_flops.find(config.dtype);
  if (peak == cluster.gpu.peak_flops.end() || peak->second <= 0) {
    return Status::InvalidArgument(
        fmt::format("--dtype = {}: cluster '{}' ({}) has no peak FLOP/s "
                    "for it",
                    DTypeName(config.dtype), cluster.name, cluster.gpu.name));
  }
  for (const auto& [key, value] : {std::pair{"compute efficiency", options.compute_efficiency},
                                   std::pair{"memory efficiency", options.memory_efficiency}}) {
    if (!(value > 0 && value <= 1)) {
      return Status::InvalidArgument(fmt::format("{} = {}: must lie in (0, 1]", key, value));
    }
  }
  if (cluster.gpu.hbm_bandwidth <= 0) {
    return Status::InvalidArgument(
        fmt::format("cluster '{}': GPU HBM bandwidth must be > 0", cluster.name));
  }
  if (config.tp > 1 && cluster.intra_node.bandwidth <= 0) {
    return Status::InvalidArgument(fmt::format(
        "cluster '{}': intra-node bandwidth must be > 0 for --tp = {}", cluster.name, config.tp));
  }
  return RooflineCostModel(peak->second, cluster.gpu.hbm_bandwidth, cluster.intra_node, config.tp,
                           options);
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

}  // namespace pipette
