// RooflineCostModel: layer times from a roofline on the cluster's GPU.
//
// For each of F, I and W: time = max(FLOPs / (peak[dtype] * compute_efficiency),
// bytes / (HBM bandwidth * memory_efficiency)), FLOPs and bytes divided by tp for tensor-parallel
// layers; F and I add the layer's tensor-parallel all-reduce, a ring inside the node:
// 2(t-1)/t * bytes / link bandwidth + 2(t-1) * link latency. W has no collective. The backward
// passes are charged the forward's HBM bytes (weights and activations are read again). A pass
// with no FLOPs takes no time (an embedding has no input gradient).
//
// Make() refuses a peak below kMinFlops, an HBM or (with tp > 1) NVLink bandwidth below
// kMinBandwidth and a latency above kMaxLinkLatency (cluster_spec.h); efficiencies must lie in
// (0, 1]. Their products can still be absurd (an efficiency of 1e-320): the partitioner checks
// every time against common/duration_limit.h and names the input CauseOf() finds.
//
// Example:
//   RooflineCostModel model(cluster, config, {.compute_efficiency = 0.5});
//   LayerTimes t = model.Times(graph.layer(id));
#pragma once

#include <string>
#include <utility>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/cluster/parallel_config.h"
#include "pipette/common/status.h"
#include "pipette/cost/cost_model.h"

namespace pipette {

struct RooflineOptions {
  double compute_efficiency = 0.5;  // achieved fraction of peak FLOP/s on GEMMs
  double memory_efficiency = 0.8;   // achieved fraction of HBM bandwidth
};

class RooflineCostModel final : public CostModel {
 public:
  // Checks that the GPU has a peak for config.dtype of at least kMinFlops, the floors and limits
  // above, and that the efficiencies lie in (0, 1]; errors name the key, value and rule.
  static Result<RooflineCostModel> Make(const ClusterSpec& cluster, const ParallelConfig& config,
                                        RooflineOptions options = {});

  LayerTimes Times(const Layer& layer) const override;

  // The input behind `layer`'s longest pass: the compute efficiency and peak, the memory
  // efficiency and HBM bandwidth, or the tensor-parallel link, whichever term dominates.
  std::string CauseOf(const Layer& layer) const override;

  // Seconds of a ring all-reduce of `bytes` over `ranks` GPUs of one node.
  double RingAllReduceSeconds(double bytes, int ranks) const;

 private:
  RooflineCostModel(double flops, double hbm, LinkSpec link, int tp, RooflineOptions options,
                    std::string hardware)
      : flops_(flops),
        hbm_(hbm),
        link_(link),
        tp_(tp),
        options_(options),
        hardware_(std::move(hardware)) {}

  double flops_;   // peak FLOP/s for the configured dtype
  double hbm_;     // HBM bytes/s
  LinkSpec link_;  // intra-node link used by TP collectives
  int tp_;
  RooflineOptions options_;
  std::string hardware_;  // "bf16 on cluster 'dgx-h100'", for CauseOf()
};

}  // namespace pipette
