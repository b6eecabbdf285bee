#include "pipette/engine/calibration.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace pipette {
namespace {

// Sums of the weighted normal equations, weight 1/t^2 per point.
struct WeightedSums {
  double w = 0, wx = 0, wy = 0, wxx = 0, wxy = 0;
  int n = 0;
};

WeightedSums SumsOf(const std::vector<CalibrationPoint>& points) {
  WeightedSums s;
  for (const CalibrationPoint& p : points) {
    if (!(p.seconds > 0)) continue;
    const double x = static_cast<double>(p.bytes), y = p.seconds, w = 1 / (y * y);
    s.w += w;
    s.wx += w * x;
    s.wy += w * y;
    s.wxx += w * x * x;
    s.wxy += w * x * y;
    ++s.n;
  }
  return s;
}

}  // namespace

AlphaBeta FitAlphaBeta(const std::vector<CalibrationPoint>& points) {
  const WeightedSums s = SumsOf(points);
  if (s.n == 0) return {};
  const double determinant = s.w * s.wxx - s.wx * s.wx;
  // One size only (or one point): no slope to fit.
  if (s.n < 2 || !(determinant > 1e-12 * s.w * s.wxx)) return {s.wy / s.w, 0};
  AlphaBeta fit;
  fit.alpha = (s.wxx * s.wy - s.wx * s.wxy) / determinant;
  fit.beta = (s.w * s.wxy - s.wx * s.wy) / determinant;
  if (fit.alpha < 0) {  // through the origin: minimise sum w (beta x - y)^2
    fit = {0, s.wxx > 0 ? s.wxy / s.wxx : 0};
  }
  if (fit.beta < 0) fit = {s.wy / s.w, 0};  // a constant: the weighted mean
  return fit;
}

std::vector<CalibrationPoint> PointsOf(const Calibration& calibration, std::string_view what) {
  std::vector<CalibrationPoint> out;
  for (const CalibrationPoint& p : calibration.points) {
    if (p.what == what) out.push_back(p);
  }
  return out;
}

ClusterSpec HostClusterSpec(const Calibration& c) {
  ClusterSpec spec;
  spec.name = fmt::format("host-calibration-{}", c.id);
  spec.source = fmt::format("pipette calibrate --engine {} on {} at {} (calibration {}, {} ranks)",
                            c.engine, c.host, c.created_at, c.id, c.ranks);
  spec.nodes = 1;
  spec.gpus_per_node = c.cores;
  spec.nics_per_node = 1;
  spec.topology = Topology::kSingleSwitch;
  spec.gpu.name = "cpu-core";
  spec.gpu.memory_bytes = std::llround(c.memory_bytes / std::max(c.cores, 1));
  spec.gpu.hbm_bandwidth = std::max(c.memory_bandwidth, 1e6);
  spec.gpu.peak_flops[DType::kFP32] = std::max(c.gemm_flops, 1e9);
  double bandwidth = 0;  // the p2p fit's 1/beta, or the largest point's rate when beta is 0
  if (c.p2p.beta > 0) {
    bandwidth = 1 / c.p2p.beta;
  } else {
    for (const CalibrationPoint& p : PointsOf(c, kCalibrationP2p)) {
      if (p.seconds > 0) bandwidth = std::max(bandwidth, static_cast<double>(p.bytes) / p.seconds);
    }
    if (bandwidth <= 0) bandwidth = 1e9;
  }
  spec.intra_node = {std::max(bandwidth, 1e6), std::clamp(c.p2p.alpha, 0.0, 1.0)};
  spec.inter_node = spec.intra_node;
  return spec;
}

}  // namespace pipette
