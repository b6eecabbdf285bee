#include "pipette/store/run_data.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <vector>

namespace pipette {
namespace {

constexpr std::array<std::string_view, 10> kKindNames = {
    "F", "I", "W", "B", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "ALLREDUCE", "OPTIMIZER"};

}  // namespace

std::string_view EventKindName(EventKind kind) {
  return kKindNames[static_cast<std::size_t>(kind)];
}

Result<EventKind> ParseEventKind(std::string_view text) {
  for (std::size_t k = 0; k < kKindNames.size(); ++k) {
    if (kKindNames[k] == text) return static_cast<EventKind>(k);
  }
  return Status::InvalidArgument(fmt::format(
      "event kind '{}': must be one of F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, ALLREDUCE, "
      "OPTIMIZER",
      text));
}

double RunData::Metric(std::string_view name, double fallback) const {
  for (const MetricRow& m : metrics) {
    if (m.name == name) return m.value;
  }
  return fallback;
}

double RunData::SteadyStepTime(int max_steps) const {
  std::vector<double> steps;
  for (int k = 0; k < max_steps; ++k) {
    const double t = Metric(fmt::format("step_times_s[{}]", k), -1);
    if (t < 0) break;
    steps.push_back(t);
  }
  if (steps.empty()) return Metric("step_time_s");
  if (steps.size() > 1) steps.erase(steps.begin());
  double sum = 0;
  for (const double t : steps) sum += t;
  return sum / static_cast<double>(steps.size());
}

std::pair<double, double> PairedSteadyStepTimes(const RunData& predicted, const RunData& measured) {
  int steps = 0;
  while (predicted.Metric(fmt::format("step_times_s[{}]", steps), -1) >= 0) ++steps;
  return {predicted.SteadyStepTime(), measured.SteadyStepTime(steps > 0 ? steps : 1 << 30)};
}

int RunData::NumRanks() const {
  int ranks = 0;
  for (const EventRow& e : events) ranks = std::max(ranks, e.rank + 1);
  for (const MemoryRow& m : memory) ranks = std::max(ranks, m.rank + 1);
  return ranks;
}

void AddPerRank(std::vector<MetricRow>& metrics, const std::string& name,
                const std::vector<double>& values, const std::string& unit) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    metrics.push_back({fmt::format("{}[{}]", name, k), values[k], unit});
  }
}

}  // namespace pipette
