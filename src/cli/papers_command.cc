// `pipette papers NAME [--data DIR] [--format markdown|csv] [--check]`: one published table
// reproduced (the papers layer: pipette/papers/comparison.h), the published value next to
// pipette's, on standard output.
#include <fmt/core.h>
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "pipette/papers/comparison.h"

namespace pipette::cli {
namespace {

struct PapersOptions {
  std::string name;
  std::string data = "experiments/papers";
  std::string format = "markdown";
  bool check = false;
};

int Run(const PapersOptions& o) {
  Result<ComparisonTable> table = BuildComparison(o.name, o.data);
  if (!table.ok()) return ReportError("papers", table.status());
  std::cout << (o.format == "csv" ? FormatCsv(*table) : FormatMarkdown(*table));
  std::cout.flush();
  if (o.check && table->unexplained() > 0) {
    return ReportError("papers", Status::FailedPrecondition(fmt::format(
                                     "{}: {} of {} compared cells differ from the published "
                                     "values without a documented reason",
                                     table->name, table->unexplained(), table->compared())));
  }
  return kExitOk;
}

}  // namespace

void RegisterPapersCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<PapersOptions>();
  CLI::App* cmd = app.add_subcommand(
      "papers", "Reproduce a published table: the paper's value next to pipette's, per cell");
  cmd->add_option("name", options->name,
                  fmt::format("Table: {}", fmt::join(PaperTableNames(), ", ")))
      ->required()
      ->check(CLI::IsMember(PaperTableNames()));
  cmd->add_option("--data", options->data,
                  "Directory of the typed-in published values (experiments/papers)")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--format", options->format, "Output format: markdown or csv")
      ->capture_default_str()
      ->check(CLI::IsMember({"markdown", "csv"}));
  cmd->add_flag(
      "--check", options->check,
      "Exit with status 2 when a compared cell differs from the published value without a "
      "documented reason");
  cmd->callback([options, &exit_code] { exit_code = Run(*options); });
}

}  // namespace pipette::cli
