// Placement: which pipeline rank holds each global stage.
//
// Two layouts cover the published schedules: the loop layout of interleaved schedules (rank r holds
// stages r, r+p, r+2p, ...) and the V layout of ZBV, DualPipe and DualPipe-V (rank r holds stages r
// and 2p-1-r, so the first and the last stage share rank 0). Custom schedules bring any mapping in
// which every rank holds at least one stage. Immutable value type.
#pragma once

#include <vector>

#include "pipette/common/status.h"

namespace pipette {

class Placement {
 public:
  Placement() = default;

  // Loop layout: stage c*p + r on rank r, for chunks c = 0..v-1. REQUIRES: p >= 1, v >= 1.
  static Placement Loop(int p, int v);
  // V layout: rank r holds stages r and 2p-1-r. REQUIRES: p >= 1.
  static Placement VShape(int p);
  // Any mapping; errors name the stage or rank that breaks the rule (rank out of [0, p), a rank
  // without stages).
  static Result<Placement> FromStageRanks(std::vector<int> stage_to_rank, int p);

  int num_ranks() const { return num_ranks_; }
  int num_stages() const { return static_cast<int>(stage_to_rank_.size()); }
  // REQUIRES: 0 <= stage < num_stages().
  int rank_of(int stage) const { return stage_to_rank_[stage]; }
  const std::vector<int>& stage_to_rank() const { return stage_to_rank_; }
  // Returns the stages held by `rank`, ascending.
  std::vector<int> StagesOf(int rank) const;

  friend bool operator==(const Placement&, const Placement&) = default;

 private:
  Placement(std::vector<int> stage_to_rank, int p)
      : num_ranks_(p), stage_to_rank_(std::move(stage_to_rank)) {}

  int num_ranks_ = 0;
  std::vector<int> stage_to_rank_;
};

}  // namespace pipette
