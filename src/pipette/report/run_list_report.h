// How a database's runs read (`pipette runs`): the JSON array for tools (each run's row with its
// configuration as an object) and the text for people (a row per run: id, engine, status, start,
// the configuration keys that name what ran, the error of a failed run). `db` is the database's
// path, as the header names it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/store/experiment_db.h"

namespace pipette {

nlohmann::ordered_json RunListJson(const std::vector<RunRecord>& runs);
std::string RunListText(const std::vector<RunRecord>& runs, std::string_view db);

}  // namespace pipette
