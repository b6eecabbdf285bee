// `pipette db merge OUT IN... [--format text|json] [--quiet]`: joins experiment databases (the
// shards of `pipette sweep SPEC --shard K/N`) into OUT (store/db_merge.h: ids remapped, a sweep
// point's first finished run kept, provenance in `merged_runs`, one transaction, inputs read only).
// On a terminal a merge past 2 s shows a progress line (runs merged of all inputs'), unless
// --quiet.
#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_store.h"
#include "pipette/common/progress_line.h"
#include "pipette/report/merge_report.h"
#include "pipette/store/db_merge.h"

namespace pipette::cli {
namespace {

struct MergeOptions {
  std::string out;
  std::vector<std::string> inputs;
  std::string format = "text";
  bool quiet = false;
};

int RunMerge(const MergeOptions& o) {
  ProgressLine line("pipette db merge", stderr, ProgressWanted(o.quiet));
  MergeProgress progress{[&](std::int64_t done, std::int64_t total) {
    line.Update(static_cast<double>(done), static_cast<double>(total),
                fmt::format("{} of {} runs", done, total));
  }};
  Result<MergeReport> report = MergeDatabases(o.out, o.inputs, progress);
  line.End();
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
  merge->add_flag("--quiet", o->quiet, "No progress line on the terminal (shown past 2 s)");
  merge->callback([o, &exit_code] { exit_code = RunMerge(*o); });
}

}  // namespace pipette::cli
