#include "pipette/schedule/costs.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "pipette/common/printable.h"
#include "pipette/common/split.h"

namespace pipette {
namespace {

Status CheckSet(const std::vector<StageCost>& stages, const std::vector<double>& full_backward,
                int num_stages, std::string_view what) {
  if (static_cast<int>(stages.size()) != num_stages) {
    return Status::InvalidArgument(
        fmt::format("costs: {} has {} stage entries for a program of {} stages", what,
                    stages.size(), num_stages));
  }
  if (!full_backward.empty() && static_cast<int>(full_backward.size()) != num_stages) {
    return Status::InvalidArgument(
        fmt::format("costs: {} has {} full-backward entries for a program of {} stages", what,
                    full_backward.size(), num_stages));
  }
  auto bad = [](double x) { return !(x >= 0.0 && std::isfinite(x)); };
  for (int s = 0; s < num_stages; ++s) {
    const StageCost& c = stages[s];
    if (bad(c.f) || bad(c.i) || bad(c.w) || (!full_backward.empty() && bad(full_backward[s]))) {
      return Status::InvalidArgument(fmt::format(
          "costs: {}, stage {}: F={} I={} W={}: every cost must be finite and non-negative", what,
          s, c.f, c.i, c.w));
    }
  }
  return Status::Ok();
}

Status CheckAllToAll(const std::vector<StageComm>& alltoall, int num_stages) {
  if (alltoall.empty()) return Status::Ok();
  if (static_cast<int>(alltoall.size()) != num_stages) {
    return Status::InvalidArgument(fmt::format(
        "costs: {} all-to-all entries for a program of {} stages", alltoall.size(), num_stages));
  }
  for (int s = 0; s < num_stages; ++s) {
    const StageComm& c = alltoall[s];
    if (!(c.f >= 0 && c.f <= kMaxCost && c.b >= 0 && c.b <= kMaxCost)) {
      return Status::InvalidArgument(
          fmt::format("costs: stage {}: all-to-all F={} B={}: each must be a number in [0, {:g}]",
                      s, c.f, c.b, kMaxCost));
    }
  }
  return Status::Ok();
}

}  // namespace

Status Costs::Check(int num_stages, int m) const {
  PIPETTE_RETURN_IF_ERROR(CheckSet(stages, full_backward, num_stages, "the reference set"));
  PIPETTE_RETURN_IF_ERROR(CheckAllToAll(alltoall, num_stages));
  if (microbatch_variant.empty()) return Status::Ok();
  if (static_cast<int>(microbatch_variant.size()) != m) {
    return Status::InvalidArgument(
        fmt::format("costs: {} per-microbatch entries for a program of {} microbatches",
                    microbatch_variant.size(), m));
  }
  for (int mb = 0; mb < m; ++mb) {
    const int v = microbatch_variant[mb];
    if (v < 0 || v >= static_cast<int>(variants.size())) {
      return Status::InvalidArgument(fmt::format(
          "costs: microbatch {} uses cost set {}, but there are {}", mb, v, variants.size()));
    }
  }
  for (std::size_t v = 0; v < variants.size(); ++v) {
    PIPETTE_RETURN_IF_ERROR(CheckSet(variants[v].stages, variants[v].full_backward, num_stages,
                                     fmt::format("cost set {}", v)));
  }
  return Status::Ok();
}

Result<StageCost> ParseStageCost(std::string_view text, std::string_view key, StageCost defaults) {
  StageCost cost = defaults;
  std::map<std::string, std::string> given;  // name -> its value as written, to refuse a repeat
  for (const std::string& item : SplitAt(text, ',')) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return Status::InvalidArgument(fmt::format(
          "{} '{}': expected NAME=VALUE items such as F=1,I=1,W=1", key, Printable(item)));
    }
    const std::string name = Printable(item.substr(0, eq)), number = Printable(item.substr(eq + 1));
    if (const auto earlier = given.find(name); earlier != given.end()) {
      return Status::InvalidArgument(
          fmt::format("{} {}={}: {} is given twice (first {}={}); give each of F, I, W once", key,
                      name, number, name, name, earlier->second));
    }
    given.emplace(name, number);
    char* parse_end = nullptr;
    const double value = std::strtod(number.c_str(), &parse_end);
    if (number.empty() || *parse_end != '\0' || !(value >= 0.0 && value <= kMaxCost)) {
      return Status::InvalidArgument(
          fmt::format("{} {}='{}': must be a number in [0, {:g}]", key, name, number, kMaxCost));
    }
    if (name == "F") {
      cost.f = value;
    } else if (name == "I") {
      cost.i = value;
    } else if (name == "W") {
      cost.w = value;
    } else if (name == "B") {
      return Status::InvalidArgument(fmt::format("{} B={}: B is I+W; give I and W (e.g. I={},W={})",
                                                 key, number, value / 2, value / 2));
    } else {
      return Status::InvalidArgument(
          fmt::format("{} {}={}: unknown key '{}' (expected F, I or W)", key, name, number, name));
    }
  }
  return cost;
}

}  // namespace pipette
