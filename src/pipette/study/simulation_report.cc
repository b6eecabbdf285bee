#include "pipette/study/simulation_report.h"

#include <fmt/core.h>

#include "pipette/common/build_info.h"
#include "pipette/common/printable.h"
#include "pipette/report/schedule_report.h"
#include "pipette/store/trace_rows.h"

namespace pipette {

// ---- a model ------------------------------------------------------------------------------------

namespace {

// What was simulated where, the JSON line's first keys (in the order of the run's configuration).
void AddModelShape(const ModelPlan& p, nlohmann::ordered_json& json) {
  json["model"] = p.model.name;
  json["cluster"] = p.cluster.name;
  json["nodes"] = p.cluster.nodes;
  json["schedule"] = p.schedule.name;
  json["pp"] = p.config.pp;
  json["dp"] = p.config.dp;
  json["tp"] = p.config.tp;
  json["v"] = p.config.v;
  json["m"] = p.config.microbatches;
}

}  // namespace

SimulationConfig ConfigOf(const ModelPlan& p, const SimulateSettings& s,
                          const ModelSimulationOptions& o) {
  const ParallelConfig& c = p.config;
  SimulationConfig config;
  config.model = p.model.name;
  config.cluster = p.cluster.name;
  config.nodes = p.cluster.nodes;
  config.schedule = p.schedule.name;
  config.pp = c.pp;
  config.dp = c.dp;
  config.tp = c.tp;
  config.v = c.v;
  config.m = c.microbatches;
  config.micro_batch_size = c.micro_batch_size;
  config.seq_len = c.seq_len;
  config.dtype = DTypeName(c.dtype);
  config.zero = c.zero_stage;
  config.placement_order = PlacementOrderName(c.placement);
  config.topology = TopologyName(p.cluster.topology);
  config.recompute = c.recompute;
  config.ep = c.ep;
  config.alltoall_overlap = o.overlap_alltoall;
  config.efficiency = p.efficiency;
  config.ideal_network = s.ideal_network;
  config.latency_us = s.latency_us;
  config.steps = s.steps;
  config.grad_reduce = GradReduceName(o.grad_reduce);
  config.grad_overlap = o.grad_overlap;
  config.grad_bucket_params = o.grad_bucket_params;
  return config;
}

RunData RunDataOf(const ModelReport& report) {
  const ModelSimulation& m = report.simulation;
  const double device_bytes = static_cast<double>(report.plan.cluster.gpu.memory_bytes);
  RunData data;
  data.events = ToEventRows(report.plan.program, m.sim.trace, m.sim.collectives);
  data.memory = ToMemoryRows(m.memory);
  data.metrics = {{"step_time_s", m.step_time, "s"},
                  {"pipeline_time_s", m.sim.pipeline_makespan, "s"},
                  {"bubble_ratio", m.sim.bubble_ratio, "fraction"},
                  {"mfu", m.mfu, "fraction"},
                  {"tokens_per_s", m.tokens_per_s, "tokens/s"},
                  {"device_memory_bytes", device_bytes, "B"}};
  AddPerRank(data.metrics, "step_times_s", m.step_times, "s");
  AddPerRank(data.metrics, "busy_s", m.sim.busy, "s");
  AddPerRank(data.metrics, "allreduce_s", m.allreduce, "s");
  AddPerRank(data.metrics, "allreduce_exposed_s", m.allreduce_exposed, "s");
  AddPerRank(data.metrics, "peak_memory_bytes", m.peak_memory, "B");
  if (m.oom) {
    data.metrics.push_back({"oom_rank", static_cast<double>(m.oom->rank), "rank"});
    data.metrics.push_back({"oom_time_s", m.oom->time, "s"});
    data.metrics.push_back({"oom_bytes", m.oom->bytes, "B"});
  }
  return data;
}

std::string_view RunStatusOf(const ModelReport& report) {
  return report.simulation.oom ? kRunOom : kRunOk;
}

nlohmann::ordered_json JsonOf(const ModelReport& report) {
  const ModelPlan& p = report.plan;
  const ModelSimulation& m = report.simulation;
  nlohmann::ordered_json json;
  AddModelShape(p, json);
  json["steps"] = report.settings.steps;
  json["step_time_s"] = m.step_time;
  json["step_times_s"] = m.step_times;
  json["pipeline_time_s"] = m.sim.pipeline_makespan;
  json["allreduce_s"] = m.allreduce;
  json["allreduce_exposed_s"] = m.allreduce_exposed;
  json["grad_reduce"] = GradReduceName(report.options.grad_reduce);
  json["grad_overlap"] = report.options.grad_overlap;
  json["grad_buckets"] = m.grad_buckets;
  // Replicas whose actors ran; the others are exact copies (sim/replica_symmetry.h).
  json["replicas_run"] = m.sim.simulated_replicas;
  json["bubble_ratio"] = m.sim.bubble_ratio;
  json["mfu"] = m.mfu;
  json["tokens_per_s"] = m.tokens_per_s;
  json["peak_memory_bytes"] = m.peak_memory;
  json["device_memory_bytes"] = p.cluster.gpu.memory_bytes;
  json["status"] = RunStatusOf(report);
  if (m.oom) {
    json["oom_rank"] = m.oom->rank;
    json["oom_time_s"] = m.oom->time;
    json["oom_bytes"] = m.oom->bytes;
  }
  return json;
}

std::string TextOf(const ModelReport& report) {
  const ModelPlan& p = report.plan;
  const ClusterSpec& cluster = p.cluster;
  const ParallelConfig& c = p.config;
  const ModelSimulation& m = report.simulation;
  const int steps = report.settings.steps;
  std::string out =
      fmt::format("# pipette {} simulate {} on {} ({} x {} {}), SimGrid{}\n", Version(),
                  p.model.name, cluster.name, cluster.nodes, cluster.gpus_per_node,
                  cluster.gpu.name, report.settings.ideal_network ? ", ideal network" : "");
  out += fmt::format(
      "# {} pp={} dp={} tp={} v={} m={} micro_batch_size={} seq_len={} dtype={} zero={} "
      "recompute={} efficiency={}\n",
      p.schedule.name, c.pp, c.dp, c.tp, c.v, c.microbatches, c.micro_batch_size, c.seq_len,
      DTypeName(c.dtype), c.zero_stage, c.recompute ? "yes" : "no", p.efficiency);
  if (p.model.attributes.experts > 0) {
    out += fmt::format("# moe: {} routed experts, ep={}, all-to-all overlap in (F;B) cells: {}\n",
                       p.model.attributes.experts, c.ep,
                       report.options.overlap_alltoall ? "on" : "off");
  }
  out += fmt::format(
      "status        {}{}\n", RunStatusOf(report),
      !m.oom ? ""
             : fmt::format(" (rank {} holds {:.2f} GB of {:.2f} GB at t = {:.4f} ms)", m.oom->rank,
                           m.oom->bytes / 1e9, cluster.gpu.memory_bytes / 1e9, m.oom->time * 1e3));
  out += fmt::format(
      "step_time     {:.4f} ms   ({}pipeline {:.4f} ms + data-parallel all-reduce)\n",
      m.step_time * 1e3, steps > 1 ? fmt::format("mean of {} steps; first step's ", steps) : "",
      m.sim.pipeline_makespan * 1e3);
  const ModelSimulationOptions& s = report.options;
  if (c.dp > 1) {
    out += fmt::format(
        "grad_reduce   {}{}{}\n", GradReduceName(s.grad_reduce),
        s.grad_reduce == GradReduce::kAnalytic
            ? " (ring time after every replica's program)"
            : fmt::format(", {} buckets of <= {} parameters", m.grad_buckets, s.grad_bucket_params),
        s.grad_overlap ? ", overlapped with the backward" : "");
  }
  out += fmt::format("tokens_per_s  {:.0f}\n", m.tokens_per_s);
  out += fmt::format("mfu           {:.3f}\n", m.mfu);
  out += fmt::format("bubble_ratio  {:.4f}   (pipeline, idle/total)\n", m.sim.bubble_ratio);
  out += "#\n# rank       busy  all-reduce   exposed       idle  peak_memory\n";
  out += "#    -       [ms]        [ms]      [ms]       [ms]         [GB]\n";
  for (int r = 0; r < c.pp; ++r) {
    out += fmt::format("  {:>4} {:>10.3f} {:>11.3f} {:>9.3f} {:>10.3f} {:>12.2f}\n", r,
                       m.sim.busy[r] * 1e3, m.allreduce[r] * 1e3, m.allreduce_exposed[r] * 1e3,
                       (m.step_times[0] - m.sim.busy[r] - m.allreduce_exposed[r]) * 1e3,
                       m.peak_memory[r] / 1e9);
  }
  return out;
}

// ---- a schedule with fixed times ----------------------------------------------------------------

TimesSimulationConfig ConfigOf(const TimesPlan& p, const SimulateSettings& s) {
  TimesSimulationConfig config;
  config.schedule = p.schedule.name;
  config.pp = p.schedule.p;
  config.v = p.schedule.v;
  config.m = p.schedule.m;
  config.f_ms = p.times_ms.f;
  config.i_ms = p.times_ms.i;
  config.w_ms = p.times_ms.w;
  config.latency_us = s.latency_us;
  config.steps = s.steps;
  return config;
}

RunData RunDataOf(const TimesReport& report) {
  const SimulationResult& r = report.simulation;
  RunData data;
  data.events = ToEventRows(report.plan.program, r.trace);
  data.metrics = {{"step_time_s", r.makespan / report.settings.steps, "s"},
                  {"pipeline_time_s", r.pipeline_makespan, "s"},
                  {"bubble_ratio", r.bubble_ratio, "fraction"}};
  AddPerRank(data.metrics, "busy_s", r.busy, "s");
  return data;
}

std::string_view RunStatusOf(const TimesReport&) { return kRunOk; }

nlohmann::ordered_json JsonOf(const TimesReport& report) {
  const SimulationResult& r = report.simulation;
  nlohmann::ordered_json json = ScheduleJson(report.plan.schedule);
  json["steps"] = report.settings.steps;
  json["step_time_s"] = r.makespan / report.settings.steps;
  json["bubble_ratio"] = r.bubble_ratio;
  json["busy_s"] = r.busy;
  json["status"] = RunStatusOf(report);
  return json;
}

std::string TextOf(const TimesReport& report) {
  const Schedule& schedule = report.plan.schedule;
  const StageCost& ms = report.plan.times_ms;
  const SimulateSettings& s = report.settings;
  const SimulationResult& r = report.simulation;
  std::string out =
      fmt::format("# pipette {} simulate {} p={} v={} m={} (SimGrid, ideal network)\n", Version(),
                  schedule.name, schedule.p, schedule.v, schedule.m);
  out += fmt::format("# per-chunk times F={} I={} W={} ms, message latency {} us\n", ms.f, ms.i,
                     ms.w, s.latency_us);
  out += fmt::format("step_time     {:.6g} ms{}\n", r.makespan / s.steps * 1e3,
                     s.steps > 1 ? fmt::format("   (mean of {} steps)", s.steps) : "");
  out += fmt::format("bubble_ratio  {:.4f}   (idle/total)\n", r.bubble_ratio);
  out += "#\n# rank       busy       idle\n#    -       [ms]       [ms]\n";
  for (std::size_t k = 0; k < r.busy.size(); ++k) {
    out += fmt::format("  {:>4} {:>10.4g} {:>10.4g}\n", k, r.busy[k] * 1e3,
                       (r.pipeline_makespan - r.busy[k]) * 1e3);
  }
  return out;
}

nlohmann::ordered_json JsonOf(const CostsFromReport& report) {
  const RecordedWork& w = report.plan.work;
  nlohmann::ordered_json json;
  json["engine"] = "sim";
  json["costs_from"] = w.run_id;
  json["schedule"] = w.schedule;
  json["p"] = w.p;
  json["v"] = w.v;
  json["m"] = w.m;
  json["dp"] = w.dp;
  json["steps"] = w.traced_steps;
  json["step_time_s"] = StepTimes(report.result);
  json["measured_step_time_s"] = w.step_times;
  json["bubble_ratio"] = report.result.bubble_ratio;
  if (!report.memory.empty()) json["peak_memory_bytes"] = PeakMemory(report.memory);
  json["prediction"] = ConfigOf(report.plan).prediction;
  return json;
}

std::string TextOf(const CostsFromReport& report) {
  const RecordedWork& w = report.plan.work;
  const PredictionSettings& s = report.plan.settings;
  std::string out = fmt::format(
      "# pipette simulate --costs-from {}: {} run of {} p={} v={} m={} dp={}, {} traced steps\n"
      "# {} for {} ranks;  messages {:.3g} us + {:.3g} ns/KiB ({}); {:.3g} us per "
      "instruction ({}); calibration {}\n",
      w.run_id, w.engine, Printable(w.schedule), w.p, w.v, w.m, w.dp, w.traced_steps,
      s.cores > 0 ? fmt::format("{} shared cores{}", s.cores, s.alone ? ", costs alone" : "")
                  : "a core each",
      w.p * w.dp, s.latency * 1e6, s.seconds_per_byte * 1024 * 1e9, s.message_source,
      s.instruction_overhead * 1e6, s.overhead_source,
      s.calibration_id > 0 ? fmt::format("{}", s.calibration_id) : "none");
  out += "#  step  predicted [ms]  measured [ms]   error\n";
  const std::vector<double> steps = StepTimes(report.result);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const double measured = k < w.step_times.size() ? w.step_times[k] : 0;
    out += fmt::format("{:7d} {:15.3f} {:14.3f} {:+7.1f}%\n", k + 1, steps[k] * 1e3, measured * 1e3,
                       measured > 0 ? (steps[k] - measured) / measured * 100 : 0.0);
  }
  out += fmt::format("# bubble ratio {:.4f}", report.result.bubble_ratio);
  if (!report.memory.empty()) {
    out += "; peak memory per rank:";
    for (const double b : PeakMemory(report.memory))
      out += fmt::format(" {:.2f} MiB", b / (1 << 20));
  }
  return out + "\n";
}

}  // namespace pipette
