// `pipette schedule search -p P -m M [-v V] [--times F=..,I=..,W=..] [--stage-times "F=..;..."]
//  [--latency C] [--memory-limit K] [--placement loop|v] [--time-limit S] [--iterations N]
//  [--seed N] [--rank-speed R=S,..] [--microbatch-seqlens LIST|FILE --seq-len L
//  [--attention-share A]] [--link-slowdown A-B=F,..] [--format text|csv|json]`: the order that
//  SearchSchedule() finds
// (pipette/schedule/search.h), written as `pipette schedule` writes a schedule.
#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/uneven_options.h"
#include "pipette/report/schedule_report.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/schedule/search.h"
#include "pipette/schedule/uneven_work.h"

namespace pipette::cli {
namespace {

struct SearchCliOptions {
  int p = 0;
  int m = 0;
  int v = 0;
  std::string times = "F=1,I=1,W=1";
  std::string stage_times;
  double latency = 0.0;
  int memory_limit = 0;
  std::string placement = "loop";
  double time_limit = 10.0;
  int iterations = 2000;
  std::uint64_t seed = 1;
  std::string format = "text";
  UnevenWorkOptions uneven;  // as every command that runs a schedule takes it
  CLI::Option* p_option = nullptr;
  CLI::Option* m_option = nullptr;
  CLI::Option* v_option = nullptr;
};

int SearchFail(const Status& status) { return ReportError("schedule search", status); }

// "F=..,I=..,W=..;F=..;..." -> one StageCost per stage, each starting from --times.
Result<Costs> ParseStageTimes(const std::string& text, int stages, StageCost defaults) {
  if (text.empty()) return Costs::Uniform(stages, defaults);
  Costs costs;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(';', start);
    const std::string item = text.substr(start, end == std::string::npos ? end : end - start);
    const std::string key = fmt::format("--stage-times (stage {})", costs.stages.size());
    PIPETTE_ASSIGN_OR_RETURN(StageCost cost, ParseStageCost(item, key, defaults));
    costs.stages.push_back(cost);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (static_cast<int>(costs.stages.size()) != stages) {
    return Status::InvalidArgument(
        fmt::format("--stage-times = '{}': has {} entries, needs one per stage (p*v = {}), "
                    "separated by ';'",
                    text, costs.stages.size(), stages));
  }
  return costs;
}

// The search's options, and what the report names: the nominal --times and the uneven work.
struct Resolved {
  SearchOptions search;
  StageCost times;
  UnevenWork uneven;
};

Result<Resolved> Resolve(const SearchCliOptions& o) {
  if (o.p_option->count() == 0) {
    return Status::InvalidArgument("missing -p (pipeline ranks), e.g. -p 4");
  }
  if (o.m_option->count() == 0) {
    return Status::InvalidArgument("missing -m (microbatches per step), e.g. -m 8");
  }
  SearchOptions s;
  PIPETTE_ASSIGN_OR_RETURN(s.placement, ParseSearchPlacement(o.placement));
  s.p = o.p;
  s.m = o.m;
  s.v = o.v_option->count() > 0 ? o.v : (s.placement == SearchPlacement::kV ? 2 : 1);
  for (const auto& [key, value] : {std::tuple{"-p", s.p}, {"-m", s.m}, {"-v", s.v}}) {
    if (value < 1) {
      return Status::InvalidArgument(fmt::format("{} = {}: must be at least 1", key, value));
    }
  }
  PIPETTE_ASSIGN_OR_RETURN(StageCost times, ParseStageCost(o.times, "--times"));
  if (static_cast<long long>(s.p) * s.v > kMaxSearchChunks) {
    return Status::InvalidArgument(fmt::format("p*v = {}: the search accepts at most {} chunks",
                                               static_cast<long long>(s.p) * s.v,
                                               kMaxSearchChunks));
  }
  PIPETTE_ASSIGN_OR_RETURN(Costs nominal, ParseStageTimes(o.stage_times, s.p * s.v, times));
  PIPETTE_ASSIGN_OR_RETURN(UnevenWork work, ParseUnevenWorkOptions(o.uneven, s.p, s.m));
  const Placement placement =
      s.placement == SearchPlacement::kV ? Placement::VShape(s.p) : Placement::Loop(s.p, s.v);
  if (s.placement == SearchPlacement::kV && s.v != 2) {
    return Status::InvalidArgument(
        fmt::format("-v = {}: the V placement holds exactly 2 stages per rank (v = 2)", s.v));
  }
  PIPETTE_ASSIGN_OR_RETURN(s.costs, ApplyUnevenWork(nominal, placement, s.m, work));
  s.evaluate.link_slowdowns = work.link_slowdowns;
  if (!(o.latency >= 0.0 && o.latency <= kMaxCost)) {
    return Status::InvalidArgument(
        fmt::format("--latency = {}: must be a number in [0, {:g}]", o.latency, kMaxCost));
  }
  if (!(o.time_limit >= 0.0 && o.time_limit <= 86400.0)) {
    return Status::InvalidArgument(
        fmt::format("--time-limit = {}: must be a number of seconds in [0, 86400] (0: no limit)",
                    o.time_limit));
  }
  s.evaluate.p2p_latency = o.latency;
  s.memory_limit = o.memory_limit;
  s.time_limit_s = o.time_limit;
  s.iterations = o.iterations;
  s.seed = o.seed;
  return Resolved{std::move(s), times, std::move(work)};
}

int Run(const SearchCliOptions& cli) {
  Result<Resolved> resolved = Resolve(cli);
  if (!resolved.ok()) return SearchFail(resolved.status());
  const SearchOptions& options = resolved->search;
  Result<SearchResult> result = SearchSchedule(options);
  if (!result.ok()) return SearchFail(result.status());
  if (cli.format == "csv") {
    std::cout << ToComputeCsv(result->schedule);
    return kExitOk;
  }
  Result<Program> program = Lower(result->schedule);
  if (!program.ok()) return SearchFail(Status::Internal(program.status().message()));
  EvaluateOptions evaluate = options.evaluate;
  evaluate.record_timeline = cli.format == "text";
  Result<Evaluation> evaluation = Evaluate(*program, options.costs, evaluate);
  if (!evaluation.ok()) return SearchFail(evaluation.status());
  const ScheduleReport report{result->schedule,     *program,      *evaluation,     resolved->times,
                              evaluate.p2p_latency, options.costs, resolved->uneven};
  if (cli.format == "json") {
    std::ostringstream schedule_json;
    WriteScheduleJson(report, schedule_json);
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(schedule_json.str());
    j["search"] = SearchJson(options, *result);
    std::cout << j.dump() << "\n";
  } else {
    std::cout << SearchText(options, *result) << FormatScheduleText(report);
  }
  return kExitOk;
}

}  // namespace

void RegisterScheduleSearchCommand(CLI::App& schedule, int& exit_code) {
  auto o = std::make_shared<SearchCliOptions>();
  CLI::App* cmd = schedule.add_subcommand(
      "search", "Search an order minimising the makespan for the given costs and memory limit");
  o->p_option = cmd->add_option("-p,--pp", o->p, "Pipeline ranks");
  o->m_option = cmd->add_option("-m,--microbatches", o->m, "Microbatches per step");
  o->v_option = cmd->add_option("-v,--chunks", o->v, "Stages per rank (default 1; v placement: 2)");
  cmd->add_option("--times", o->times, "Per-chunk costs F=..,I=..,W=.. of every stage")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--stage-times", o->stage_times,
                  "Per-stage costs 'F=..,I=..,W=..;F=..;...' (p*v entries, each from --times)")
      ->check(NonEmpty());
  cmd->add_option("--latency", o->latency, "Point-to-point latency per message")
      ->capture_default_str();
  cmd->add_option("--memory-limit", o->memory_limit,
                  "Most activation chunks in flight per rank (peak_activations; 0: none)")
      ->capture_default_str();
  cmd->add_option("--placement", o->placement, "Stage placement: loop or v")
      ->capture_default_str()
      ->check(CLI::IsMember({"loop", "v"}));
  cmd->add_option("--time-limit", o->time_limit, "Seconds the search may take (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--iterations", o->iterations, "Local-search moves (the reproducible budget)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the local search's moves")
      ->capture_default_str()
      ->check(UnsignedDecimal());
  AddUnevenWorkOptions(cmd, o->uneven, /*seq_len=*/true, /*attention_share=*/true);
  AddClusterSpeedOption(cmd, o->uneven);
  cmd->add_option("--format", o->format, "Output format: text, csv or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "csv", "json"}));
  cmd->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace pipette::cli
