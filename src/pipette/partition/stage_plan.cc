#include "pipette/partition/stage_plan.h"

#include <algorithm>
#include <numeric>

namespace pipette {
namespace {

double MaxOverMean(const std::vector<double>& values) {
  if (values.empty()) return 1.0;
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  const double max = *std::max_element(values.begin(), values.end());
  return mean > 0 ? max / mean : 1.0;
}

}  // namespace

double StagePlan::balance() const {
  std::vector<double> times;
  for (const StageInfo& s : stages) times.push_back(s.time());
  return MaxOverMean(times);
}

std::vector<double> StagePlan::rank_times() const {
  std::vector<double> times(placement.num_ranks(), 0.0);
  for (const StageInfo& s : stages) times[s.rank] += s.time();
  return times;
}

double StagePlan::rank_balance() const { return MaxOverMean(rank_times()); }

Costs StagePlan::ToCosts() const {
  Costs costs;
  bool moe = false;
  for (const StageInfo& s : stages) {
    costs.stages.push_back(StageCost{s.time_f, s.time_i, s.time_w});
    costs.alltoall.push_back(StageComm{s.time_alltoall_f, s.time_alltoall_b});
    moe |= s.time_alltoall_f > 0 || s.time_alltoall_b > 0;
  }
  if (!moe) costs.alltoall.clear();
  return costs;
}

}  // namespace pipette
