#include "pipette/engine/fault.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace pipette {

Fault Fault::FromEnv() {
  Fault f;
  const char* rank = std::getenv("PIPETTE_FAULT_RANK");
  const char* kind = std::getenv("PIPETTE_FAULT");
  if (rank != nullptr && kind != nullptr) {
    f.rank_ = std::atoi(rank);
    f.kind_ = kind;
  }
  if (const char* step = std::getenv("PIPETTE_FAULT_STEP")) f.step_ = std::atoi(step);
  return f;
}

void Fault::AtCompute(int world_rank, int step) {
  if (triggered_ || world_rank != rank_ || step < step_) return;
  triggered_ = true;
  if (kind_ == "kill") std::raise(SIGKILL);
  if (kind_ == "hang") {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

bool Fault::SkipWeightGrad(int world_rank) {
  if (skipped_ || world_rank != rank_ || kind_ != "skip-w") return false;
  skipped_ = true;
  return true;
}

bool Fault::PoisonWeights(int world_rank, int step) {
  if (poisoned_ || world_rank != rank_ || kind_ != "nan" || step < step_) return false;
  poisoned_ = true;
  return true;
}

}  // namespace pipette
