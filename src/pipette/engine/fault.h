// Fault: a failure injected into one rank of a real training run (CPU or CUDA engine), for the
// tests that prove a dead, hung or wrong rank ends the run with an error instead of a hang or a
// silent wrong answer.
//
// PIPETTE_FAULT_RANK=r PIPETTE_FAULT=kill|hang|skip-w|nan [PIPETTE_FAULT_STEP=k]: at its first
// compute instruction (of step k, counted from 0, when PIPETTE_FAULT_STEP is set), world rank r
// kills itself with SIGKILL, or stops making progress; or it skips the weight gradient of its
// first backward (a wrong result that --verify must catch); or (nan, CPU engine) it makes one of
// its weights NaN, as a diverged run's weights become, so that the loss is NaN from step k on
// (the recording of a diverged run relies on it: no learning rate diverges reproducibly on every
// build). A step's first compute comes after the barrier that starts the step, so every earlier
// step is finished on every rank (and recorded: the kill test of per-step recording relies on
// it). Without the variables nothing happens. Plain value type.
#pragma once

#include <string>

namespace pipette {

class Fault {
 public:
  // The fault the environment asks for (none when the variables are unset).
  static Fault FromEnv();

  // At a compute instruction of world rank `world_rank` in step `step`: kills or hangs it if asked
  // to, the first time only.
  void AtCompute(int world_rank, int step);
  // True once, at the first weight gradient of the faulty rank under skip-w: skip it.
  bool SkipWeightGrad(int world_rank);
  // True once, at the first compute of step k or later of the faulty rank under nan: make a weight
  // NaN.
  bool PoisonWeights(int world_rank, int step);

 private:
  int rank_ = -1;
  int step_ = 0;
  std::string kind_;
  bool triggered_ = false;
  bool skipped_ = false;
  bool poisoned_ = false;
};

}  // namespace pipette
