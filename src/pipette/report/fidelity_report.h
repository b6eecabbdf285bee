// How an experiment's fidelity reads (fidelity/fidelity_summary.h: `pipette compare --experiment
// NAME`): per prediction and its measured run the program, the step times and their error, the
// per-instruction duration errors; then the step-time MAPE, the worst error and the median
// instruction error. The JSON object for tools, the text for people.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "pipette/fidelity/fidelity_summary.h"

namespace pipette {

nlohmann::ordered_json FidelityJson(const std::string& experiment, const FidelitySummary& summary);
std::string FidelityText(const std::string& experiment, const FidelitySummary& summary);

}  // namespace pipette
