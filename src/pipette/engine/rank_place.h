// What every real engine's Fabric (backends/cpu/fabric.h, backends/cuda/fabric.h) says alike about
// a rank and a step: where the rank sits in the run, and what world rank 0 learns of each step.
#pragma once

namespace pipette {

// World rank w is pipeline rank w % p of replica w / p.
struct RankPlace {
  int world_rank = 0;
  int pp_rank = 0;
  int replica = 0;
};

// What rank 0 learns of a step: the loss summed over ranks, the earliest start and latest end.
struct StepTotals {
  double loss_sum = 0;
  double earliest_start = 0;
  double latest_end = 0;
};

}  // namespace pipette
