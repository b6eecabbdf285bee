// `pipette db merge OUT IN... [--format text|json]`: joins experiment databases (the shards of
// `pipette sweep SPEC --shard K/N`) into OUT (store/db_merge.h: ids remapped, a sweep point's first
// finished run kept, provenance in `merged_runs`, one transaction, inputs read only).
#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/report/merge_report.h"
#include "pipette/store/db_merge.h"

namespace pipette::cli {
namespace {

struct MergeOptions {
  std::string out;
  std::vector<std::string> inputs;
  std::string format = "text";
};

int RunMerge(const MergeOptions& o) {
  Result<MergeReport> report = MergeDatabases(o.out, o.inputs);
  if (!report.ok()) return ReportError("db merge", report.status());
  if (o.format == "json") {
    std::cout << MergeJson(o.out, *report).dump() << "\n";
  } else {
    std::cout << MergeText(o.out, *report);
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
