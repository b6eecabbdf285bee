// How a comparison of a prediction with its measured run reads (fidelity/run_compare.h:
// `pipette compare A B`): the text for people (the program, the step times and their errors, per
// event kind the median and 90th percentile of the start and duration errors, the worst events,
// the peak memory per rank) and the JSON object for tools.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pipette/fidelity/run_compare.h"
#include "pipette/store/run_data.h"

namespace pipette {

// The text report of `c`, whose prediction is `predicted`, recorded in database `db`.
std::string ComparisonText(const RunComparison& c, const RunData& predicted, std::string_view db);
nlohmann::ordered_json ComparisonJson(const RunComparison& c);

}  // namespace pipette
