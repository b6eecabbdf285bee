// The error of a prediction against a measurement, defined once (docs/metrics.md): the signed
// relative error (predicted - measured) / measured, and its mean magnitude over pairs (the MAPE,
// as a fraction: `pipette compare --experiment`, the compare figure's title). Pure functions.
//
// Example:
//   RelativeError(110, 100);                           // +0.10: predicted 10% slow
//   MeanAbsoluteRelativeError({90, 220}, {100, 200});  // 0.10
#pragma once

#include <vector>

namespace pipette {

// (predicted - measured) / measured; 0 when measured is 0 (nothing to be wrong about).
double RelativeError(double predicted, double measured);

// The mean of |RelativeError(predicted[k], measured[k])| over k; 0 for no pairs.
// REQUIRES: predicted.size() == measured.size().
double MeanAbsoluteRelativeError(const std::vector<double>& predicted,
                                 const std::vector<double>& measured);

}  // namespace pipette
