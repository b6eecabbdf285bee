// ParamSet: the parameters of every module a rank holds, grouped by name, with the AdamW update.
//
// One name may have several copies (a tied LM head and the embedding; the two copies of a piece
// under DualPipe). The set keeps them equal: gradients are summed over the copies before the
// update, the first copy is updated and its values are copied to the others. Iteration is in name
// order, the same on every rank. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpt.h"

namespace pipette::cpu {

struct AdamWConfig {
  double lr = 3e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // decoupled; only for parameters marked `decay`
};

class ParamSet {
 public:
  struct Entry {
    std::vector<Param*> copies;  // copies[0] is the one updated
    Tensor m, v;                 // AdamW moments (allocated by AllocateOptimizerState)
  };

  // Adds every parameter of `chain`. Copies must have equal shapes.
  void Add(ModuleChain& chain);
  // Allocates the AdamW moments (after all Add calls).
  void AllocateOptimizerState();

  std::map<std::string, Entry>& entries() { return entries_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  // Elements of the distinct parameters.
  std::int64_t NumElements() const;

  // copies[0].grad = the sum of the copies' gradients.
  void SumLocalCopies();
  // One AdamW step (step counts from 1) on copies[0] from copies[0].grad; the other copies get its
  // values. Then zeroes every gradient.
  void Step(const AdamWConfig& config, int step);

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace pipette::cpu
