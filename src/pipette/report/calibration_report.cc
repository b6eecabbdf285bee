#include "pipette/report/calibration_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "pipette/cluster/host_cluster_toml.h"
#include "pipette/common/printable.h"

namespace pipette {
namespace {

nlohmann::ordered_json FitJson(const AlphaBeta& fit) {
  return {{"alpha_s", fit.alpha}, {"beta_s_per_byte", fit.beta}};
}

const AlphaBeta& FitOf(const Calibration& c, const std::string& what) {
  return what == kCalibrationP2p ? c.p2p : c.allreduce;
}

double Residual(double measured, double fit) {
  return measured > 0 ? (measured - fit) / measured : 0;
}

// Bytes per second of the fit's slope ("inf" for none).
std::string Bandwidth(const AlphaBeta& fit) {
  return fit.beta > 0 ? fmt::format("{:.3f} GB/s", 1e-9 / fit.beta) : "unbounded";
}

}  // namespace

nlohmann::ordered_json CalibrationJson(const Calibration& c) {
  nlohmann::ordered_json json;
  json["calibration_id"] = c.id;
  json["engine"] = c.engine;
  json["host"] = c.host;
  json["created_at"] = c.created_at;
  json["version"] = c.version;
  json["ranks"] = c.ranks;
  json["cores"] = c.cores;
  json["p2p"] = FitJson(c.p2p);
  json["allreduce"] = FitJson(c.allreduce);
  json["instruction_overhead_s"] = c.instruction_overhead_s;
  json["gemm_flops"] = c.gemm_flops;
  json["gemm_flops_alone"] = c.gemm_flops_alone;
  json["memory_bytes"] = c.memory_bytes;
  json["memory_bandwidth"] = c.memory_bandwidth;
  auto& points = json["points"] = nlohmann::ordered_json::array();
  for (const CalibrationPoint& p : c.points) {
    const double fit = FitOf(c, p.what).Of(p.bytes);
    points.push_back({{"what", p.what},
                      {"ranks", p.ranks},
                      {"bytes", p.bytes},
                      {"seconds", p.seconds},
                      {"fit_s", fit},
                      {"residual", Residual(p.seconds, fit)}});
  }
  auto& gemms = json["gemms"] = nlohmann::ordered_json::array();
  for (const GemmTiming& g : c.gemms) {
    gemms.push_back({{"pass", GemmPassName(g.pass)},
                     {"m", g.m},
                     {"n", g.n},
                     {"k", g.k},
                     {"ranks", g.ranks},
                     {"seconds", g.seconds}});
  }
  return json;
}

void PrintCalibration(const Calibration& c) {
  fmt::print(
      "# pipette {} calibrate --engine {}: calibration {} of {} ({} ranks, {} usable cores), "
      "{}\n",
      c.version, c.engine, c.id, Printable(c.host), c.ranks, c.cores, c.created_at);
  fmt::print("# fits: seconds = alpha + beta * bytes, least squares on relative error\n");
  fmt::print("#   p2p        alpha {:8.3f} us   beta {:.4g} s/B ({})\n", c.p2p.alpha * 1e6,
             c.p2p.beta, Bandwidth(c.p2p));
  fmt::print("#   allreduce  alpha {:8.3f} us   beta {:.4g} s/B ({}), {} ranks\n",
             c.allreduce.alpha * 1e6, c.allreduce.beta, Bandwidth(c.allreduce), c.ranks);
  fmt::print("# instruction overhead {:.3f} us per instruction\n", c.instruction_overhead_s * 1e6);
  fmt::print("# sgemm, one core: {:.2f} GFLOP/s with every rank running, {:.2f} GFLOP/s alone\n",
             c.gemm_flops * 1e-9, c.gemm_flops_alone * 1e-9);
  fmt::print("# memory: {:.2f} GB, copy {:.2f} GB/s\n", c.memory_bytes * 1e-9,
             c.memory_bandwidth * 1e-9);
  fmt::print("#  what       ranks        bytes   measured [us]     fit [us]   residual\n");
  for (const CalibrationPoint& p : c.points) {
    const double fit = FitOf(c, p.what).Of(p.bytes);
    fmt::print("{:<10} {:>6} {:>12} {:>15.3f} {:>12.3f} {:>9.1f}%\n", p.what, p.ranks, p.bytes,
               p.seconds * 1e6, fit * 1e6, 100 * Residual(p.seconds, fit));
  }
  if (c.gemms.empty()) return;
  fmt::print(
      "# GEMM table: {} shapes x passes, one core's time per call (F: x W^T, I: dy W, W: dW += "
      "dy^T "
      "x), {} ranks at once\n",
      c.gemms.size(), c.gemms.front().ranks);
  fmt::print("# pass      m      n      k   per call [us]   GFLOP/s\n");
  for (const GemmTiming& g : c.gemms) {
    fmt::print("  {:<4} {:>6} {:>6} {:>6} {:>15.3f} {:>9.2f}\n", GemmPassName(g.pass), g.m, g.n,
               g.k, g.seconds * 1e6, 2.0 * static_cast<double>(g.m * g.n * g.k) / g.seconds * 1e-9);
  }
}

void PrintCalibrationList(const std::vector<Calibration>& calibrations) {
  if (calibrations.empty()) {
    fmt::print("# no calibrations (pipette calibrate --engine cpu makes one)\n");
    return;
  }
  fmt::print(
      "#  id  engine  host                  created                    ranks  cores  p2p alpha "
      "[us]  p2p [GB/s]  allreduce alpha [us]  overhead [us]  sgemm [GFLOP/s]\n");
  for (const Calibration& c : calibrations) {
    fmt::print(
        "{:>5}  {:<6}  {:<20}  {:<25}  {:>5}  {:>5}  {:>14.3f}  {:>10.3f}  {:>20.3f}  {:>13.3f}  "
        "{:>15.2f}\n",
        c.id, c.engine, Printable(c.host), c.created_at, c.ranks, c.cores, c.p2p.alpha * 1e6,
        c.p2p.beta > 0 ? 1e-9 / c.p2p.beta : 0.0, c.allreduce.alpha * 1e6,
        c.instruction_overhead_s * 1e6, c.gemm_flops * 1e-9);
  }
}

std::string HostClusterToml(const Calibration& c) {
  return FormatHostClusterToml(
      HostClusterSpec(c),
      fmt::format("This machine as pipette calibrate measured it (calibration {}, {}): one node "
                  "whose\n\"GPUs\" are its cores. docs/clusters.md describes every key.",
                  c.id, c.created_at));
}

}  // namespace pipette
