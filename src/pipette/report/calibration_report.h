// What `pipette calibrate` and `pipette calibrations` print and write about a Calibration
// (engine/calibration.h): the text report for people (the fits, each point with the fit's value and
// its residual), the JSON object for tools, the one-line-per-calibration list, and the cluster file
// (docs/clusters.md) that describes the calibrated machine to `pipette simulate --cluster FILE`.
// Pure functions of their arguments (the printers write to standard output).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipette/engine/calibration.h"

namespace pipette {

// The calibration as JSON: every field, the fits as {"alpha_s", "beta_s_per_byte"}, and the points
// (each with "fit_s" and "residual": (measured - fit) / measured).
nlohmann::ordered_json CalibrationJson(const Calibration& c);

// The report: a '#' header, the machine figures, both fits, then one aligned row per point.
void PrintCalibration(const Calibration& c);

// One row per calibration (id, host, created, ranks, cores, p2p and all-reduce fits, overhead,
// GEMM rates), under a '#' header; "# no calibrations" when there are none.
void PrintCalibrationList(const std::vector<Calibration>& calibrations);

// A cluster file for the calibrated machine: one node whose "GPUs" are its cores (gpu.tflops.fp32
// = the contended GEMM rate, memory = RAM / cores, hbm = the copy bandwidth), both links the p2p
// fit (bandwidth 1/beta, latency alpha). A fit with beta = 0 takes the bandwidth of the largest
// p2p point instead.
std::string HostClusterToml(const Calibration& c);

}  // namespace pipette
