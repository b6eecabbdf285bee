// `pipette simulate --times F=..,I=..,W=.. [--schedule NAME] [-p P] [-v V] [-m M]
//  [--ideal-network] [--latency-us X] [--format text|json]`: one training step of a schedule on
// the SimGrid engine with per-chunk times in milliseconds. Model- and cluster-based simulation
// (--model, --cluster, data parallelism, memory) is the next part of the SimGrid engine work.
#include <fmt/core.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "pipette/common/build_info.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/simulator.h"

namespace pipette::cli {
namespace {

struct SimulateOptions {
  std::string schedule = "1f1b";
  ScheduleParams params{4, 0, 8, 0};
  std::string times;
  bool ideal_network = false;
  double latency_us = 0;
  std::string format = "text";
};

int Fail(const Status& status) {
  fmt::print(stderr, "pipette simulate: {}\n", status.message());
  return status.code() == StatusCode::kInternal ? kExitFailure : kExitBadInput;
}

int Run(const SimulateOptions& o) {
  if (o.times.empty()) {
    return Fail(Status::InvalidArgument(
        "--times F=..,I=..,W=.. (milliseconds per chunk) is required: simulation from a model "
        "and a cluster (--model, --cluster) is not available yet"));
  }
  if (!o.ideal_network) {
    return Fail(Status::InvalidArgument(
        "--ideal-network is required with --times: the cluster network model is not available "
        "yet"));
  }
  if (!(o.latency_us >= 0 && o.latency_us <= kMaxCost)) {
    return Fail(Status::InvalidArgument(
        fmt::format("--latency-us = {}: must be a number in [0, {:g}]", o.latency_us, kMaxCost)));
  }
  Result<StageCost> ms = ParseStageCost(o.times, "--times");
  if (!ms.ok()) return Fail(ms.status());
  Result<Schedule> schedule = MakeSchedule(o.schedule, o.params);
  if (!schedule.ok()) return Fail(schedule.status());
  Result<Program> program = Lower(*schedule);
  if (!program.ok()) return Fail(program.status());
  const StageCost seconds{ms->f / 1e3, ms->i / 1e3, ms->w / 1e3};
  SimulationCase one;
  one.program = &*program;
  one.costs = Costs::Uniform(schedule->num_stages(), seconds);
  one.latency = o.latency_us / 1e6;
  Result<std::vector<SimulationResult>> results = Simulate({one});
  if (!results.ok()) return Fail(results.status());
  const SimulationResult& r = results->front();

  if (o.format == "json") {
    nlohmann::ordered_json json;
    json["schedule"] = schedule->name;
    json["p"] = schedule->p;
    json["v"] = schedule->v;
    json["m"] = schedule->m;
    json["step_time_s"] = r.makespan;
    json["bubble_ratio"] = r.bubble_ratio;
    json["busy_s"] = r.busy;
    json["status"] = "ok";
    std::cout << json.dump() << "\n";
    return kExitOk;
  }
  fmt::print("# pipette {} simulate {} p={} v={} m={} (SimGrid, ideal network)\n", Version(),
             schedule->name, schedule->p, schedule->v, schedule->m);
  fmt::print("# per-chunk times F={} I={} W={} ms, message latency {} us\n", ms->f, ms->i, ms->w,
             o.latency_us);
  fmt::print("step_time     {:.6g} ms\n", r.makespan * 1e3);
  fmt::print("bubble_ratio  {:.4f}   (idle/total)\n", r.bubble_ratio);
  fmt::print("#\n# rank       busy       idle\n#    -       [ms]       [ms]\n");
  for (std::size_t k = 0; k < r.busy.size(); ++k) {
    fmt::print("  {:>4} {:>10.4g} {:>10.4g}\n", k, r.busy[k] * 1e3, (r.makespan - r.busy[k]) * 1e3);
  }
  return kExitOk;
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate a training step on SimGrid");
  cmd->add_option("--schedule", o->schedule, "Schedule name or csv:FILE")->capture_default_str();
  cmd->add_option("-p,--pp", o->params.p, "Pipeline ranks")->capture_default_str();
  cmd->add_option("-v,--chunks", o->params.v, "Stages per rank (default: the schedule's)");
  cmd->add_option("-m,--microbatches", o->params.m, "Microbatches")->capture_default_str();
  cmd->add_option("--times", o->times, "Per-chunk times in ms: F=..,I=..,W=.. (B = I+W)");
  cmd->add_flag("--ideal-network", o->ideal_network,
                "Unbounded bandwidth; every message takes --latency-us");
  cmd->add_option("--latency-us", o->latency_us, "Per-message latency (microseconds)")
      ->capture_default_str();
  cmd->add_option("--format", o->format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace pipette::cli
