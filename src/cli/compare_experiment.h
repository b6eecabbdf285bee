// `pipette compare --experiment NAME`: every prediction of an experiment against its measured run
// (fidelity/fidelity_summary.h), one line each, and the MAPE of the step time, as text or JSON.
#pragma once

#include <string>

#include "pipette/common/status.h"

namespace pipette::cli {

// Prints the experiment's pairs from database `path` (opened read-only) in `format` ("text" or
// "json"). InvalidArgument naming --experiment when the database has no such experiment.
Status CompareExperiment(const std::string& path, const std::string& experiment,
                         const std::string& format);

}  // namespace pipette::cli
