// `pipette db merge OUT IN... [--format text|json]`: joins experiment databases (the shards of
// `pipette sweep SPEC --shard K/N`) into OUT (store/db_merge.h: ids remapped, a sweep point's first
// finished run kept, provenance in `merged_runs`, one transaction, inputs read only).
#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/common/printable.h"
#include "pipette/store/db_merge.h"

namespace pipette::cli {
namespace {

struct MergeOptions {
  std::string out;
  std::vector<std::string> inputs;
  std::string format = "text";
};

void PrintJson(const MergeOptions& o, const MergeReport& report) {
  nlohmann::ordered_json json;
  json["out"] = o.out;
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
  std::cout << json.dump() << "\n";
}

void PrintText(const MergeOptions& o, const MergeReport& report) {
  fmt::print("# pipette db merge: {} input{} into {} ({})\n", report.sources.size(),
             report.sources.size() == 1 ? "" : "s", Printable(o.out),
             report.created ? "created" : "existing");
  fmt::print(
      "# runs: in the input; copied; skipped as the same run (host, pid, start) already in OUT; "
      "skipped as a point that already had a finished run; skipped as still running\n");
  fmt::print("{:>6} {:>7} {:>9} {:>10} {:>8} {:>12} {:>12} {:>10}  {}\n", "runs", "copied",
             "same_run", "dup_point", "running", "experiments", "calibrations", "rows", "input");
  for (const MergeSourceReport& s : report.sources) {
    fmt::print("{:>6} {:>7} {:>9} {:>10} {:>8} {:>12} {:>12} {:>10}  {}\n", s.runs, s.copied,
               s.duplicate_runs, s.duplicate_points, s.running, s.experiments_added,
               s.calibrations_copied, s.rows_copied, Printable(s.path));
  }
}

int RunMerge(const MergeOptions& o) {
  Result<MergeReport> report = MergeDatabases(o.out, o.inputs);
  if (!report.ok()) return ReportError("db merge", report.status());
  if (o.format == "json") {
    PrintJson(o, *report);
  } else {
    PrintText(o, *report);
  }
  return kExitOk;
}

}  // namespace

void RegisterDbCommands(CLI::App& app, int& exit_code) {
  CLI::App* db = app.add_subcommand("db", "Manage experiment databases (merge shards)");
  db->require_subcommand(1);
  auto o = std::make_shared<MergeOptions>();
  CLI::App* merge = db->add_subcommand(
      "merge",
      "Join experiment databases (sweep shards) into OUT: ids remapped, each sweep point "
      "once, provenance kept");
  merge->add_option("out", o->out, "The database to merge into (created when missing)")
      ->required()
      ->check(DatabasePathValidator());
  merge->add_option("inputs", o->inputs, "The databases to merge (read only)")
      ->required()
      ->expected(1, -1);
  merge->add_option("--format", o->format, "Output format")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  merge->callback([o, &exit_code] { exit_code = RunMerge(*o); });
}

}  // namespace pipette::cli
