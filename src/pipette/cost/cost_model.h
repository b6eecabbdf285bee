// CostModel: how long one layer's forward, input-gradient and weight-gradient backward take for
// one microbatch on one GPU of its stage. An interface because a measured table (calibration from
// a real engine) will replace the roofline; the partitioner and the simulator only see this.
// Implementations are immutable after construction and thread-safe.
#pragma once

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
};

}  // namespace pipette
