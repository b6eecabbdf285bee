#include "pipette/report/run_list_report.h"

#include <fmt/core.h>

#include "pipette/common/printable.h"
#include "pipette/store/run_config.h"

namespace pipette {

nlohmann::ordered_json RunListJson(const std::vector<RunRecord>& runs) {
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (const RunRecord& r : runs) {
    json.push_back({{"id", r.id},
                    {"experiment_id", r.experiment_id},
                    {"engine", r.engine},
                    {"status", r.status},
                    {"started_at", r.started_at},
                    {"ended_at", r.ended_at},
                    {"host", r.host},
                    {"pid", r.pid},
                    {"git_rev", r.git_rev},
                    {"error", r.error},
                    {"config", nlohmann::ordered_json::parse(r.config, nullptr, false)}});
  }
  return json;
}

std::string RunListText(const std::vector<RunRecord>& runs, std::string_view db) {
  std::string out;
  out += fmt::format("# {} runs in {}\n", runs.size(), Printable(db));
  out += fmt::format("#   id  engine  status   started_at                config\n");
  for (const RunRecord& r : runs) {
    const RecordedConfig config = ReadRunConfig(r.config);
    std::string summary;
    for (const RunKey key : kRunListKeys) {
      if (const nlohmann::ordered_json* value = config.Find(key)) {
        summary += fmt::format(" {}={}", NameOf(key),
                               value->is_string() ? value->get<std::string>() : value->dump());
      }
    }
    // A name from a model or cluster file of an older pipette, or an error quoting one, may hold
    // control bytes: printed as \xHH, never raw.
    out += fmt::format("{:>6}  {:<6}  {:<7}  {:<24} {}{}\n", r.id, r.engine, r.status, r.started_at,
                       Printable(summary), r.error.empty() ? "" : "  error: " + Printable(r.error));
  }
  return out;
}

}  // namespace pipette
