// What `pipette fit` and `pipette fits` print about a fitted cost model (fidelity/cost_fit.h): each
// parameter with its value, unit and status (fitted, unconstrained, confounded with ...), then
// every fitted row (a stage's F, I, W or B median, a rank's update) measured against the fit, and
// the list of a database's fits. Pure functions of their arguments (the printers write to
// standard output).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipette/fidelity/cost_fit.h"

namespace pipette {

// The fit as JSON: its stored document with id, created_at and runs.
nlohmann::ordered_json FitJson(const CostFit& fit);

// The report: a '#' header, one row per parameter, one row per fitted row with its error.
void PrintFit(const CostFit& fit);

// Why a fit whose StepDrift exceeds kSteadyDrift should not be trusted, and what to do.
std::string DriftWarning(const CostFit& fit);

// One row per fit (id, created, family, runs, parameters fitted, the rows' worst error), under a
// '#' header; "# no fits" when there are none.
void PrintFitList(const std::vector<CostFit>& fits);

}  // namespace pipette
