#include "pipette/fidelity/relative_error.h"

#include <cmath>
#include <cstddef>

namespace pipette {

double RelativeError(double predicted, double measured) {
  return measured != 0 ? (predicted - measured) / measured : 0;
}

double MeanAbsoluteRelativeError(const std::vector<double>& predicted,
                                 const std::vector<double>& measured) {
  double sum = 0;
  for (std::size_t k = 0; k < predicted.size(); ++k) {
    sum += std::abs(RelativeError(predicted[k], measured[k]));
  }
  return predicted.empty() ? 0 : sum / static_cast<double>(predicted.size());
}

}  // namespace pipette
