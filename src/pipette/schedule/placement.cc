#include "pipette/schedule/placement.h"

#include <fmt/core.h>

namespace pipette {

Placement Placement::Loop(int p, int v) {
  std::vector<int> stage_to_rank(static_cast<std::size_t>(p) * v);
  for (int s = 0; s < p * v; ++s) stage_to_rank[s] = s % p;
  return Placement(std::move(stage_to_rank), p);
}

Placement Placement::VShape(int p) {
  std::vector<int> stage_to_rank(2 * static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    stage_to_rank[r] = r;
    stage_to_rank[2 * p - 1 - r] = r;
  }
  return Placement(std::move(stage_to_rank), p);
}

Result<Placement> Placement::FromStageRanks(std::vector<int> stage_to_rank, int p) {
  if (p < 1) return Status::InvalidArgument(fmt::format("p = {}: need at least one rank", p));
  std::vector<int> stages_per_rank(p, 0);
  for (std::size_t s = 0; s < stage_to_rank.size(); ++s) {
    int r = stage_to_rank[s];
    if (r < 0 || r >= p) {
      return Status::InvalidArgument(
          fmt::format("stage {} is placed on rank {}: ranks are 0..{}", s, r, p - 1));
    }
    ++stages_per_rank[r];
  }
  for (int r = 0; r < p; ++r) {
    if (stages_per_rank[r] == 0) {
      return Status::InvalidArgument(
          fmt::format("rank {} holds no stage: every rank needs one", r));
    }
  }
  return Placement(std::move(stage_to_rank), p);
}

std::vector<int> Placement::StagesOf(int rank) const {
  std::vector<int> stages;
  for (int s = 0; s < num_stages(); ++s) {
    if (stage_to_rank_[s] == rank) stages.push_back(s);
  }
  return stages;
}

}  // namespace pipette
