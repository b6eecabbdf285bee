// How a `pipette db merge` reads (store/db_merge.h): per input the runs it held, copied and skipped
// (the same run already in OUT, a point that already had a finished run, a run still running), the
// experiments, calibrations and rows it added; as a JSON object for tools or a table for people.
// `out` is the merged database's path.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "pipette/store/db_merge.h"

namespace pipette {

nlohmann::ordered_json MergeJson(const std::string& out, const MergeReport& report);
std::string MergeText(const std::string& out, const MergeReport& report);

}  // namespace pipette
