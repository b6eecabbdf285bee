#include "pipette/report/study_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "pipette/fidelity/relative_error.h"
#include "pipette/store/run_config.h"

namespace pipette {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// A number for the table ("" when the run has no such value).
std::string Cell(double value, const char* format) {
  return std::isfinite(value) ? fmt::format(fmt::runtime(format), value) : std::string();
}

// The largest peak_memory_bytes[r] of the run, NaN without any.
double PeakMemory(const RunData& run) {
  double peak = kNone;
  for (const MetricRow& m : run.metrics) {
    if (m.name.starts_with("peak_memory_bytes[") && std::isfinite(m.value)) {
      peak = std::isnan(peak) ? m.value : std::max(peak, m.value);
    }
  }
  return peak;
}

// The table's measured columns: a header and each run's cell; a column no run has a value in is
// left out.
struct Column {
  std::string header;
  std::vector<std::string> cells;
};

std::vector<Column> MeasuredColumns(const StudyReport& report) {
  const std::vector<double> errors = PredictionErrors(report.runs);
  std::vector<Column> columns = {{"step time [ms]", {}},
                                 {"bubble", {}},
                                 {"MFU", {}},
                                 {"peak memory [GB]", {}},
                                 {"prediction error", {}}};
  for (std::size_t k = 0; k < report.runs.size(); ++k) {
    const RunData& run = report.runs[k];
    const double step = run.Metric("step_time_s", kNone);
    columns[0].cells.push_back(
        Cell(std::isnan(step) ? kNone : run.SteadyStepTime() * 1e3, "{:.3f}"));
    columns[1].cells.push_back(Cell(run.Metric("bubble_ratio", kNone), "{:.4f}"));
    columns[2].cells.push_back(Cell(run.Metric("mfu", kNone), "{:.3f}"));
    columns[3].cells.push_back(Cell(PeakMemory(run) / 1e9, "{:.2f}"));
    columns[4].cells.push_back(Cell(errors[k], "{:+.2f}%"));
  }
  std::erase_if(columns, [](const Column& c) {
    return std::all_of(c.cells.begin(), c.cells.end(), [](const auto& x) { return x.empty(); });
  });
  return columns;
}

std::string Table(const StudyReport& report) {
  std::vector<nlohmann::ordered_json> configs;
  for (const RunData& run : report.runs) configs.push_back(ReadRunConfig(run.run.config).json);
  const std::vector<std::string> keys = DifferingConfigKeys(configs);
  const std::vector<Column> measured = MeasuredColumns(report);
  std::string html = "<table id=\"runs\">\n<thead><tr><th>run</th><th>engine</th><th>status</th>";
  for (const std::string& key : keys) html += "<th>" + HtmlEscape(key) + "</th>";
  for (const Column& c : measured) html += "<th>" + HtmlEscape(c.header) + "</th>";
  html += "</tr></thead>\n<tbody>\n";
  for (std::size_t k = 0; k < report.runs.size(); ++k) {
    const RunData& run = report.runs[k];
    html += fmt::format("<tr><td>{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td>",
                        run.run.id, HtmlEscape(run.run.engine), HtmlEscape(run.run.status));
    for (const std::string& key : keys) {
      html += "<td class=\"text\">" + HtmlEscape(ConfigValueText(configs[k][key])) + "</td>";
    }
    for (const Column& c : measured) html += "<td>" + c.cells[k] + "</td>";
    html += "</tr>\n";
  }
  return html + "</tbody>\n</table>\n";
}

constexpr const char* kStyle =
    R"(body { font-family: sans-serif; margin: 1.5em; max-width: 1400px; }
h1 { margin-bottom: 0.2em; }
p.meta { color: #555; }
table { border-collapse: collapse; font-size: 13px; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 2px 8px; text-align: right; }
th { background: #eee; text-align: center; }
td.text { text-align: left; }
figure { margin: 1.5em 0; }
figcaption { font-weight: bold; margin-bottom: 0.3em; }
figure svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
)";

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string InlineSvg(std::string_view file_text) {
  const std::size_t begin = file_text.find("<svg");
  const std::size_t end = file_text.rfind("</svg>");
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) return "";
  return std::string(file_text.substr(begin, end + 6 - begin));
}

std::vector<double> PredictionErrors(const std::vector<RunData>& runs) {
  std::vector<double> errors(runs.size(), kNone);
  std::map<std::int64_t, std::size_t> index;
  std::map<std::int64_t, std::int64_t> newest;  // measured run -> its prediction shown
  for (std::size_t k = 0; k < runs.size(); ++k) index[runs[k].run.id] = k;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const RunData& predicted = runs[k];
    const std::optional<std::int64_t> of = ReadRunConfig(predicted.run.config).costs_from;
    if (predicted.run.engine != "sim" || !of || !index.contains(*of)) continue;
    const RunData& measured = runs[index[*of]];
    if (std::isnan(predicted.Metric("step_time_s", kNone)) ||
        std::isnan(measured.Metric("step_time_s", kNone))) {
      continue;
    }
    const auto [predicted_s, measured_s] = PairedSteadyStepTimes(predicted, measured);
    const double error = 100 * RelativeError(predicted_s, measured_s);
    errors[k] = error;
    // The measured run's row: its newest prediction's error.
    std::int64_t& shown = newest[*of];
    if (shown < predicted.run.id) {
      shown = predicted.run.id;
      errors[index[*of]] = error;
    }
  }
  return errors;
}

std::string StudyReportHtml(const StudyReport& report, std::string_view generator) {
  const std::string title = report.experiment.empty() ? "runs" : report.experiment;
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>pipette report: {0}</title>\n<style>\n{1}</style>\n</head>\n<body>\n"
      "<h1>{0}</h1>\n",
      HtmlEscape(title), kStyle);
  if (!report.description.empty()) html += "<p>" + HtmlEscape(report.description) + "</p>\n";
  html += fmt::format(
      "<p class=\"meta\">{} run{} and {} figure{} from <code>{}</code>; written by {}.</p>\n",
      report.runs.size(), report.runs.size() == 1 ? "" : "s", report.figures.size(),
      report.figures.size() == 1 ? "" : "s", HtmlEscape(report.db), HtmlEscape(generator));
  html += "<h2>Figures</h2>\n";
  if (report.figures.empty() && report.not_drawn.empty()) {
    html += "<p>The study has no figures.</p>\n";
  }
  if (!report.not_drawn.empty()) {
    html += "<p>Not drawn:</p>\n<ul class=\"not-drawn\">\n";
    for (const std::string& why : report.not_drawn) html += "<li>" + HtmlEscape(why) + "</li>\n";
    html += "</ul>\n";
  }
  for (std::size_t k = 0; k < report.figures.size(); ++k) {
    html += fmt::format("<figure id=\"figure-{}\">\n<figcaption>{}</figcaption>\n{}\n</figure>\n",
                        k + 1, HtmlEscape(report.figures[k].title), report.figures[k].svg);
  }
  html += "<h2>Runs</h2>\n" + Table(report);
  return html + "</body>\n</html>\n";
}

}  // namespace pipette
