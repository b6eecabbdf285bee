// A study's report as one static HTML page (`pipette report`, issue 33): no server and no script,
// it opens from disk in any browser. Every figure of the study inline as SVG (gnuplot's, drawn by
// the caller), then the study's runs as a plain table (run, engine, status, the configuration keys
// that vary between the runs, step time, bubble, MFU, peak memory, and the prediction error where a
// run predicts another of the table or is predicted by one; a measured column no run has is left
// out). Pure functions.
//
// Example:
//   StudyReport report{"fidelity-cpu", "CPU engine, p = 2 ...", "fidelity.db", runs, figures};
//   WriteFile("out/index.html", StudyReportHtml(report, "pipette 0.1.0 (abc123)"));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipette/store/run_data.h"

namespace pipette {

struct StudyFigure {
  std::string title;  // the figure's caption, e.g. "compare: predicted against measured"
  std::string svg;    // one <svg> element (InlineSvg of gnuplot's file)
};

struct StudyReport {
  std::string experiment;   // its name ("" for runs outside any experiment)
  std::string description;  // the experiment's
  std::string db;           // the database's path, as given
  std::vector<RunData> runs;
  std::vector<StudyFigure> figures;
  std::vector<std::string> not_drawn;  // "TITLE: why" of each figure that could not be drawn
};

// `text` with &, <, >, " and ' as HTML entities.
std::string HtmlEscape(std::string_view text);

// The <svg> element of an SVG file's text (gnuplot writes an XML declaration and a DOCTYPE before
// it, which may not stand inside an HTML page); "" when the text holds no <svg ...>...</svg>.
std::string InlineSvg(std::string_view file_text);

// The relative error in percent of each run's prediction: for a simulated run predicting run X of
// `runs` (its config's costs_from) and for run X itself, (predicted - measured) / measured of their
// steady-state step times (over the steps the prediction simulates, as `pipette compare` does); X
// with several predictions shows its newest's (the highest id). NaN where the run has none. One
// entry per run, in order.
std::vector<double> PredictionErrors(const std::vector<RunData>& runs);

// The page. `generator` (pipette's version and commit) is printed in its header.
std::string StudyReportHtml(const StudyReport& report, std::string_view generator);

}  // namespace pipette
