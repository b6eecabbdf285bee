#include "pipette/report/merge_report.h"

#include <fmt/core.h>

#include "pipette/common/printable.h"

namespace pipette {

nlohmann::ordered_json MergeJson(const std::string& out, const MergeReport& report) {
  nlohmann::ordered_json json;
  json["out"] = out;
  json["created"] = report.created;
  json["inputs"] = nlohmann::ordered_json::array();
  for (const MergeSourceReport& s : report.sources) {
    json["inputs"].push_back({{"path", s.path},
                              {"runs", s.runs},
                              {"copied", s.copied},
                              {"duplicate_runs", s.duplicate_runs},
                              {"duplicate_points", s.duplicate_points},
                              {"running", s.running},
                              {"experiments_added", s.experiments_added},
                              {"calibrations_copied", s.calibrations_copied},
                              {"rows_copied", s.rows_copied}});
  }
  return json;
}

std::string MergeText(const std::string& out_path, const MergeReport& report) {
  std::string out;
  out += fmt::format("# pipette db merge: {} input{} into {} ({})\n", report.sources.size(),
                     report.sources.size() == 1 ? "" : "s", Printable(out_path),
                     report.created ? "created" : "existing");
  out += fmt::format(
      "# runs: in the input; copied; skipped as the same run (host, pid, start) already in OUT; "
      "skipped as a point that already had a finished run; skipped as still running\n");
  out += fmt::format("{:>6} {:>7} {:>9} {:>10} {:>8} {:>12} {:>12} {:>10}  {}\n", "runs", "copied",
                     "same_run", "dup_point", "running", "experiments", "calibrations", "rows",
                     "input");
  for (const MergeSourceReport& s : report.sources) {
    out +=
        fmt::format("{:>6} {:>7} {:>9} {:>10} {:>8} {:>12} {:>12} {:>10}  {}\n", s.runs, s.copied,
                    s.duplicate_runs, s.duplicate_points, s.running, s.experiments_added,
                    s.calibrations_copied, s.rows_copied, Printable(s.path));
  }
  return out;
}

}  // namespace pipette
