// CostModel: how long one layer's forward, input-gradient and weight-gradient backward take for
// one microbatch on one GPU of its stage. An interface because a measured table (calibration from
// a real engine) will replace the roofline; the partitioner and the simulator only see this.
// Implementations are immutable after construction and thread-safe.
#pragma once

#include <string>

#include "pipette/model/layer.h"

namespace pipette {

// Seconds for one microbatch.
struct LayerTimes {
  double f = 0;
  double i = 0;
  double w = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Returns the times of `layer` (amounts for one microbatch, before tensor parallelism).
  virtual LayerTimes Times(const Layer& layer) const = 0;

  // Names the inputs that set `layer`'s times, for an error about an absurd time (see
  // common/duration_limit.h): e.g. "--efficiency = 1e-320 (of 989 TFLOP/s bf16 on cluster
  // 'dgx-h100')".
  virtual std::string CauseOf(const Layer& layer) const {
    return "the cost model's times of layer '" + layer.name + "'";
  }
};

}  // namespace pipette
