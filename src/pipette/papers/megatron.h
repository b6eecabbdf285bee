// Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM
// (SC '21): the interleaved bubble (p-1)/(v*m), idle over ideal, against interleaved-1f1b over
// p in {2,4,8,16}, v in {1,2,4}, m in {p,2p,4p,8p} (experiments/papers/megatron_interleaved.csv).
#pragma once

#include <string>

#include "pipette/common/status.h"
#include "pipette/papers/comparison.h"

namespace pipette {

// The comparison table (BuildComparison's "megatron").
Result<ComparisonTable> MegatronComparison(const std::string& dir);

}  // namespace pipette
