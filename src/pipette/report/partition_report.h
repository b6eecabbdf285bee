// How a partitioned model reads (partition/model_plan.h: `pipette partition`): the JSON line for
// tools (per stage its layers, parameters, FLOPs, F/I/W times, activation and boundary bytes, the
// MoE all-to-all; the balance and each rank's memory) and the text for people (the resolved
// configuration, one row per stage, the balance, each rank's memory against its device).
// `schedule` is the schedule as the user named it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pipette/partition/model_plan.h"

namespace pipette {

nlohmann::ordered_json PartitionJson(const ModelPlan& plan, std::string_view schedule);
std::string PartitionText(const ModelPlan& plan, std::string_view schedule);

}  // namespace pipette
