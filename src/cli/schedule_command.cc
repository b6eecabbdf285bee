// `pipette schedule NAME -p P -m M [-v V] [--group-size G] [--times F=1,I=1,W=1] [--latency C]
//  [--rank-speed R=S,..] [--microbatch-seqlens LIST|FILE --seq-len L [--attention-share A]]
//  [--link-slowdown A-B=F,..] [--format text|csv|json]` and `pipette schedule --list`.
#include <fmt/core.h>

#include <iostream>
#include <string>
#include <tuple>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/uneven_options.h"
#include "pipette/report/schedule_report.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"

namespace pipette::cli {
namespace {

struct ScheduleOptions {
  std::string name;
  ScheduleParams params;
  std::string times = "F=1,I=1,W=1";
  double latency = 0.0;
  std::string format = "text";
  bool list = false;
  UnevenWorkOptions uneven;
  CLI::Option* p_option = nullptr;
  CLI::Option* m_option = nullptr;
  CLI::Option* v_option = nullptr;
};

int ScheduleFail(const Status& status) { return ReportError("schedule", status); }

// The peak memory of a built-in schedule's report, estimated before anything is built: about
// 80 MB plus 310 bytes per (stage, microbatch) chunk for the text report (it keeps every action's
// interval for its timeline), 40 MB plus 200 bytes for csv and json. Measured (1f1b, -p 16384,
// 2 cores): -m 61 (1 M chunks) 384 MB and 1.5 s, -m 244 (4 M) 1.30 GB and 4.6 s, -m 976 (16 M,
// the chunk limit) 5.0 GB and 33 s (issue 34); json 235 MB and 825 MB at 1 M and 4 M. More than
// kMaxReportBytes is refused with the estimate.
constexpr double kMaxReportBytes = 2e9;

Status CheckReportMemory(const ScheduleOptions& o) {
  if (o.name.rfind("csv:", 0) == 0) return Status::Ok();  // bounded by the file's size
  const ScheduleGenerator* generator = FindScheduleGenerator(o.name);
  if (generator == nullptr || o.params.p < 1 || o.params.m < 1) return Status::Ok();
  const int v = o.params.v > 0 ? o.params.v : generator->default_v();
  const double chunks = static_cast<double>(o.params.p) * v * o.params.m;
  if (chunks > kMaxScheduleChunks) return Status::Ok();  // MakeSchedule names the chunk limit
  const bool text = o.format == "text";
  const double bytes = (text ? 80e6 : 40e6) + (text ? 310.0 : 200.0) * chunks;
  if (bytes <= kMaxReportBytes) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "-p {} -v {} -m {}: {:.0f} chunks; the {} report would need about {:.1f} GB (about {} bytes "
      "per chunk), more than the limit of {:.0f} GB: use fewer ranks or microbatches{}",
      o.params.p, v, o.params.m, chunks, o.format, bytes / 1e9, text ? 310 : 200,
      kMaxReportBytes / 1e9, text ? ", or --format csv or json (about 200 bytes per chunk)" : ""));
}

int Run(const ScheduleOptions& o) {
  if (o.list) {
    std::cout << ScheduleListText();
    return kExitOk;
  }
  if (o.name.empty()) {
    return ScheduleFail(Status::InvalidArgument(
        "missing schedule NAME (see `pipette schedule --list`, or csv:FILE)"));
  }
  const bool from_csv = o.name.rfind("csv:", 0) == 0;
  if (!from_csv && o.p_option->count() == 0) {
    return ScheduleFail(Status::InvalidArgument("missing -p (pipeline ranks), e.g. -p 4"));
  }
  if (!from_csv && o.m_option->count() == 0) {
    return ScheduleFail(Status::InvalidArgument("missing -m (microbatches per step), e.g. -m 8"));
  }
  // A value given explicitly must be valid; 0 means "not given" only to the library.
  for (const auto& [option, key, value] :
       {std::tuple{o.p_option, "-p", o.params.p}, std::tuple{o.m_option, "-m", o.params.m},
        std::tuple{o.v_option, "-v", o.params.v}}) {
    if (option->count() > 0 && value < 1) {
      return ScheduleFail(
          Status::InvalidArgument(fmt::format("{} = {}: must be at least 1", key, value)));
    }
  }
  Result<StageCost> times = ParseStageCost(o.times, "--times");
  if (!times.ok()) return ScheduleFail(times.status());
  if (!(o.latency >= 0.0 && o.latency <= kMaxCost)) {  // checked before any work is done
    return ScheduleFail(Status::InvalidArgument(
        fmt::format("--latency = {}: must be a number in [0, {:g}]", o.latency, kMaxCost)));
  }
  if (Status within = CheckReportMemory(o); !within.ok()) return ScheduleFail(within);
  Result<Schedule> schedule = MakeSchedule(o.name, o.params);
  if (!schedule.ok()) return ScheduleFail(schedule.status());
  Result<Program> program = Lower(*schedule);
  if (!program.ok()) {
    if (from_csv) return ScheduleFail(program.status());
    return ScheduleFail(Status::Internal(
        fmt::format("built-in schedule {} p={} v={} m={} is invalid: {}", o.name, schedule->p,
                    schedule->v, schedule->m, program.status().message())));
  }
  Result<UnevenWork> uneven = ParseUnevenWorkOptions(o.uneven, schedule->p, schedule->m);
  if (!uneven.ok()) return ScheduleFail(uneven.status());
  Result<Costs> costs = ApplyUnevenWork(Costs::Uniform(schedule->num_stages(), *times),
                                        schedule->placement, schedule->m, *uneven);
  if (!costs.ok()) return ScheduleFail(costs.status());
  EvaluateOptions options;
  options.p2p_latency = o.latency;
  options.record_timeline = o.format == "text";
  options.link_slowdowns = uneven->link_slowdowns;
  Result<Evaluation> evaluation = Evaluate(*program, *costs, options);
  if (!evaluation.ok()) return ScheduleFail(evaluation.status());

  const ScheduleReport report{*schedule, *program, *evaluation, *times, o.latency, *costs, *uneven};
  if (o.format == "csv") {
    std::cout << ToComputeCsv(*schedule);
  } else if (o.format == "json") {
    WriteScheduleJson(report, std::cout);
  } else {
    std::cout << FormatScheduleText(report);
  }
  return kExitOk;
}

}  // namespace

void RegisterScheduleCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ScheduleOptions>();
  CLI::App* cmd =
      app.add_subcommand("schedule", "Generate, check, lower and evaluate a pipeline schedule");
  cmd->add_option("name", options->name,
                  "Schedule name (see --list) or csv:FILE (PyTorch compute-only CSV)");
  cmd->add_flag("--list", options->list, "List the built-in schedules and their constraints");
  options->p_option = cmd->add_option("-p,--pp", options->params.p, "Pipeline ranks");
  options->m_option =
      cmd->add_option("-m,--microbatches", options->params.m, "Microbatches per step");
  options->v_option = cmd->add_option("-v,--chunks", options->params.v,
                                      "Stages (chunks) per rank; default depends on the schedule");
  cmd->add_option("--group-size", options->params.group_size,
                  "Megatron-LM's order with G microbatches per chunk group (interleaved-1f1b and "
                  "its +1 variants). Default: interleaved-1f1b follows PyTorch (G = m / max(1, "
                  "floor(m/p))), the +1 variants Megatron (G = p)");
  cmd->add_option("--times", options->times, "Per-chunk costs F=..,I=..,W=.. (B = I+W)")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--latency", options->latency, "Point-to-point latency per message")
      ->capture_default_str();
  AddUnevenWorkOptions(cmd, options->uneven, /*seq_len=*/true, /*attention_share=*/true);
  AddClusterSpeedOption(cmd, options->uneven);
  cmd->add_option("--format", options->format, "Output format: text, csv or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "csv", "json"}));
  RegisterScheduleSearchCommand(*cmd, exit_code);
  cmd->callback([options, cmd, &exit_code] {
    if (!cmd->got_subcommand("search")) exit_code = Run(*options);
  });
}

}  // namespace pipette::cli
