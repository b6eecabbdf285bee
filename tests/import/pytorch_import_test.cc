// pipette import pytorch (import/pytorch_import.h) on traces a test helper writes in PyTorch's
// format (pytorch_trace_writer.h) from runs the simulator makes: every schedule PyTorch has and a
// CSV schedule, host (gloo) and device (kernels) clocks, both annotation forms, gzip, ranks on
// different time bases. The import must give every instruction's simulated times back under
// pipette's instruction ids, infer the schedule, and refuse every mismatch naming it.
#include "pipette/import/pytorch_import.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "import/pytorch_trace_writer.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/store/trace_rows.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

using testing::SyntheticTraceOptions;

struct Case {
  std::string schedule;  // what MakeSchedule takes
  int p, v, m;
  std::string pytorch;  // what the import should infer (empty: give the schedule)
};

// PyTorch's schedules (GPipe, 1F1B from a CSV, Interleaved1F1B, LoopedBFS, InterleavedZeroBubble,
// ZBVZeroBubble, DualPipeV) and a CSV of ZB-H1.
std::vector<Case> Cases() {
  return {{"gpipe", 2, 1, 4, "gpipe"},
          {"1f1b", 4, 1, 8, "1f1b"},
          {"interleaved-1f1b", 2, 2, 4, "interleaved-1f1b"},
          {"interleaved-gpipe", 2, 2, 4, "interleaved-gpipe"},
          {"interleaved-zb", 2, 2, 4, "interleaved-zb"},
          {"zbv", 2, 2, 4, "zbv"},
          {"dualpipe-v", 2, 2, 4, "dualpipe-v"},
          {"zb-h1", 4, 1, 8, ""}};
}

std::string TempDir(const std::string& name) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("import-" + test + "-" + name);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The simulated runs of `cases`: uneven stage costs, a 50 us message, three steps, an update per
// rank (all in one Simulate(): SimGrid runs once per process).
struct SimulatedRun {
  Program program;
  SimulationResult result;
};
std::vector<SimulatedRun> Simulated(const std::vector<Case>& cases) {
  std::vector<SimulatedRun> runs;
  for (const Case& c : cases) {
    Result<Schedule> schedule = MakeSchedule(c.schedule, {c.p, c.v, c.m});
    EXPECT_TRUE(schedule.ok()) << c.schedule << ": " << schedule.status().message();
    runs.push_back({*Lower(*schedule), {}});
  }
  std::vector<SimulationCase> sims;
  for (const SimulatedRun& run : runs) {
    SimulationCase sim;
    sim.program = &run.program;
    const int stages = run.program.num_stages();
    sim.costs = Costs::Uniform(stages, {1e-3, 1.1e-3, 0.7e-3});
    for (int s = 0; s < stages; ++s) sim.costs.stages[s].f *= 1 + 0.1 * s;
    sim.latency = 5e-5;
    sim.steps = 3;
    sim.step_barrier = true;
    sim.optimizer.assign(run.program.p, 4e-4);
    sims.push_back(sim);
  }
  Result<std::vector<SimulationResult>> results = Simulate(sims);
  EXPECT_TRUE(results.ok()) << results.status().message();
  for (std::size_t k = 0; k < runs.size(); ++k) runs[k].result = std::move((*results)[k]);
  return runs;
}

std::vector<ChromeTrace> Read(const std::vector<std::string>& paths) {
  std::vector<ChromeTrace> traces;
  for (const std::string& path : paths) {
    Result<ChromeTrace> trace = ReadChromeTrace(path);
    EXPECT_TRUE(trace.ok()) << trace.status().message();
    traces.push_back(std::move(*trace));
  }
  return traces;
}

// Every imported instruction row against the simulation's (shifted to the trace's time 0):
// `receives` false for GPipe's form, whose receives are timed from the range that issues them.
void ExpectSameTimes(const ImportedRun& run, const SimulatedRun& sim, double origin, bool receives,
                     const std::string& what) {
  std::map<std::tuple<int, int, int>, const TraceEvent*> truth;
  for (const TraceEvent& e : sim.result.trace) truth[{e.rank, e.step, e.instr_id}] = &e;
  int compared = 0;
  for (const EventRow& e : run.data.events) {
    if (e.instr_id < 0) continue;
    const auto found = truth.find({e.rank, e.step, e.instr_id});
    ASSERT_NE(found, truth.end()) << what << " rank " << e.rank << " instr " << e.instr_id;
    const bool recv = e.kind == EventKind::kRecvF || e.kind == EventKind::kRecvB;
    if (recv && !receives) continue;
    EXPECT_NEAR(e.start_s, found->second->start - origin, 1e-7)
        << what << " rank " << e.rank << " step " << e.step << " instr " << e.instr_id;
    EXPECT_NEAR(e.end_s, found->second->end - origin, 1e-7)
        << what << " rank " << e.rank << " step " << e.step << " instr " << e.instr_id;
    ++compared;
  }
  EXPECT_GT(compared, 0) << what;
}

TEST(PyTorchImport, EverySchedulePyTorchHasRoundTripsOnTheHostClock) {
  const std::vector<Case> cases = Cases();
  const std::vector<SimulatedRun> runs = Simulated(cases);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const SimulatedRun& sim = runs[k];
    SyntheticTraceOptions options;
    options.base_ns = {0, 1000, -1'000'000, 0};
    options.prefix = c.schedule;
    const testing::SyntheticTraces written = testing::WriteSyntheticTraces(
        sim.program, sim.result.trace, sim.result.updates, TempDir(c.schedule), options);
    PyTorchImportOptions import;
    if (c.pytorch.empty()) {  // a CSV schedule, given
      const std::string csv = TempDir(c.schedule) + "/schedule.csv";
      std::ofstream(csv) << ToComputeCsv(*MakeSchedule(c.schedule, {c.p, c.v, c.m}));
      import.schedule = "csv:" + csv;
    }
    Result<ImportedRun> run = ImportPyTorchRun(Read(written.paths), import);
    ASSERT_TRUE(run.ok()) << c.schedule << ": " << run.status().message();
    EXPECT_EQ(run->config.schedule, c.pytorch.empty() ? import.schedule : c.pytorch);
    EXPECT_EQ(run->config.schedule_from, c.pytorch.empty() ? "given" : "inferred");
    EXPECT_EQ(run->config.p, c.p);
    EXPECT_EQ(run->config.v, c.v);
    EXPECT_EQ(run->config.m, c.m);
    EXPECT_EQ(run->config.steps, 3);
    EXPECT_EQ(run->config.clock, "host");
    EXPECT_EQ(run->data.run.engine, "pytorch");
    // Every instruction, every update, once.
    EXPECT_EQ(run->data.events.size(),
              ToEventRows(sim.program, sim.result.trace, {}, sim.result.updates).size())
        << c.schedule;
    ExpectSameTimes(*run, sim, written.origin, true, c.schedule);
    // The step times: ProfilerStep's spans, which cover the simulated steps.
    for (int s = 0; s < 3; ++s) {
      const Span& span = sim.result.step_spans[s];
      EXPECT_NEAR(run->data.Metric(fmt::format("step_times_s[{}]", s)), span.end - span.start, 1e-6)
          << c.schedule << " step " << s;
    }
    EXPECT_NEAR(run->data.Metric("stage_f_s[0]"), 1e-3, 1e-9) << c.schedule;
  }
}

TEST(PyTorchImport, DeviceTimesComeFromTheKernelsOfGzipTraces) {
  // With kernels, a compute is its kernels' time (not its short host range) and a receive ends with
  // its NCCL kernel; no ProfilerStep ranges: steps by occurrence.
  const std::vector<Case> cases = {{"zbv", 2, 2, 4, "zbv"},
                                   {"dualpipe-v", 2, 2, 4, "dualpipe-v"},
                                   {"interleaved-1f1b", 4, 2, 8, "interleaved-1f1b"}};
  const std::vector<SimulatedRun> runs = Simulated(cases);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    SyntheticTraceOptions options;
    options.device = true;
    options.gzip = true;
    options.profiler_steps = false;
    options.base_ns = {0, -5000, 7000, 123'456'000};
    options.prefix = cases[k].schedule;
    const testing::SyntheticTraces written =
        testing::WriteSyntheticTraces(runs[k].program, runs[k].result.trace, runs[k].result.updates,
                                      TempDir(cases[k].schedule), options);
    Result<ImportedRun> run = ImportPyTorchRun(Read(written.paths), {});
    ASSERT_TRUE(run.ok()) << cases[k].schedule << ": " << run.status().message();
    EXPECT_EQ(run->config.schedule, cases[k].pytorch);
    EXPECT_EQ(run->config.clock, "device");
    EXPECT_EQ(run->config.steps, 3);
    EXPECT_EQ(run->host_timed_computes, 0);
    ExpectSameTimes(*run, runs[k], written.origin, true, cases[k].schedule);
  }
}

TEST(PyTorchImport, GPipesForwardAndBackwardRangesSplitIntoReceiveComputeAndSend) {
  // ScheduleGPipe's "Forward i" / "Backward i" hold their communication: the computes and sends
  // come out at their times, every instruction under its id.
  const std::vector<Case> cases = {{"gpipe", 2, 1, 4, "gpipe"}, {"gpipe", 4, 1, 6, "gpipe"}};
  const std::vector<SimulatedRun> runs = Simulated(cases);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    SyntheticTraceOptions options;
    options.gpipe = true;
    options.prefix = "gpipe-p" + std::to_string(cases[k].p);
    const testing::SyntheticTraces written =
        testing::WriteSyntheticTraces(runs[k].program, runs[k].result.trace, runs[k].result.updates,
                                      TempDir(options.prefix), options);
    Result<ImportedRun> run = ImportPyTorchRun(Read(written.paths), {});
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_EQ(run->config.schedule, "gpipe");
    EXPECT_EQ(run->config.annotations, "Forward/Backward");
    EXPECT_EQ(
        run->data.events.size(),
        ToEventRows(runs[k].program, runs[k].result.trace, {}, runs[k].result.updates).size());
    ExpectSameTimes(*run, runs[k], written.origin, false, options.prefix);
  }
}

// The message of importing `traces` with `options`, which must fail with InvalidArgument.
std::string Refusal(const std::vector<ChromeTrace>& traces,
                    const PyTorchImportOptions& options = {}) {
  const Result<ImportedRun> run = ImportPyTorchRun(traces, options);
  EXPECT_FALSE(run.ok());
  if (run.ok()) return "";
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument) << run.status().message();
  return std::string(run.status().message());
}

// The first of `trace`'s annotations named `name` (a failure and a scratch range if none is).
TraceRange* Named(ChromeTrace& trace, const std::string& name) {
  const auto found = std::find_if(trace.annotations.begin(), trace.annotations.end(),
                                  [&](const TraceRange& r) { return r.name == name; });
  if (found != trace.annotations.end()) return &*found;
  ADD_FAILURE() << "no range " << name << " in " << trace.path;
  static TraceRange scratch;
  return &scratch;
}

TEST(PyTorchImport, EveryMismatchIsRefusedNamingTheRankStepAndAction) {
  const std::vector<SimulatedRun> runs = Simulated({{"zbv", 2, 2, 4, "zbv"}});
  const std::string dir = TempDir("zbv");
  SyntheticTraceOptions profiled;
  profiled.prefix = "profiled";
  SyntheticTraceOptions occurrences = profiled;
  occurrences.profiler_steps = false;
  occurrences.prefix = "occurrences";
  const std::vector<ChromeTrace> good =
      Read(testing::WriteSyntheticTraces(runs[0].program, runs[0].result.trace,
                                         runs[0].result.updates, dir, profiled)
               .paths);
  const std::vector<ChromeTrace> unprofiled =
      Read(testing::WriteSyntheticTraces(runs[0].program, runs[0].result.trace,
                                         runs[0].result.updates, dir, occurrences)
               .paths);
  ASSERT_TRUE(ImportPyTorchRun(good, {}).ok());
  using ::testing::HasSubstr;
  std::vector<ChromeTrace> bad = good;
  bad[1].rank = 0;
  EXPECT_THAT(Refusal(bad), HasSubstr("both claim rank 0"));
  bad = {good[0]};
  EXPECT_THAT(Refusal(bad), HasSubstr("world size 2, but 1 traces were given: the traces of ranks "
                                      "1 are missing"));
  bad = good;
  bad[0].rank = -1;
  EXPECT_THAT(Refusal(bad), HasSubstr("no distributedInfo.rank"));
  bad = good;
  std::erase_if(bad[1].annotations,
                [](const TraceRange& r) { return r.name.substr(0, 3) == "PP:"; });
  EXPECT_THAT(Refusal(bad), HasSubstr("rank 1 ('" + good[1].path + "'): no pipeline ranges"));
  bad = good;
  Named(bad[0], "PP:0SEND_F0")->name = "PP:2SEND_F0";
  EXPECT_THAT(Refusal(bad), HasSubstr("rank 0, step 0: action '2SEND_F0' (range 'PP:2SEND_F0' at"));
  EXPECT_THAT(Refusal(bad), HasSubstr("is not in schedule zbv's program for pipeline rank 0"));
  bad = good;
  bad[0].annotations.erase(bad[0].annotations.begin() +
                           (Named(bad[0], "PP:0SEND_F1") - bad[0].annotations.data()));
  EXPECT_THAT(
      Refusal(bad),
      HasSubstr("rank 0, step 0: schedule zbv's action '0SEND_F1' is missing from the trace"));
  bad = good;
  TraceRange twice = *Named(bad[0], "PP:0SEND_F1");
  twice.start += 1e-7;
  twice.end += 1e-7;
  bad[0].annotations.push_back(twice);
  EXPECT_THAT(Refusal(bad), HasSubstr("rank 0, step 0: action '0SEND_F1' twice"));
  bad = good;
  Named(bad[1], "PP:1F0")->name = "PP:1UNKNOWN0";
  EXPECT_THAT(Refusal(bad), HasSubstr("range 'PP:1UNKNOWN0' at"));
  // A rank that ran fewer steps: its last step's ranges gone (steps by occurrence).
  bad = unprofiled;
  std::map<std::string, int> seen;
  std::erase_if(bad[1].annotations, [&](const TraceRange& r) { return ++seen[r.name] > 2; });
  EXPECT_THAT(Refusal(bad),
              HasSubstr("rank 1 ('" + unprofiled[1].path + "') ran 2 steps, rank 0 3"));
  // Outside every ProfilerStep.
  bad = good;
  std::erase_if(bad[1].annotations,
                [](const TraceRange& r) { return r.name.substr(0, 13) == "ProfilerStep#"; });
  bad[1].annotations.push_back({"ProfilerStep#3", 0, 1e-3, 1});
  EXPECT_THAT(Refusal(bad), HasSubstr("lies outside every ProfilerStep range"));
  // Another schedule over the same actions: the computes' order tells them apart.
  PyTorchImportOptions vhalf;
  vhalf.schedule = "v-half";
  EXPECT_THAT(Refusal(good, vhalf), HasSubstr("in the trace, "));
  EXPECT_THAT(Refusal(good, vhalf), HasSubstr("in schedule v-half"));
  PyTorchImportOptions m8;
  m8.m = 8;
  EXPECT_THAT(Refusal(good, m8), HasSubstr("-m = 8: the traces have 4"));
  PyTorchImportOptions unknown;
  unknown.schedule = "no-such";
  EXPECT_THAT(Refusal(good, unknown), HasSubstr("--schedule = no-such at p = 2, v = 2, m = 4"));
  PyTorchImportOptions p4;
  p4.p = 4;
  EXPECT_THAT(Refusal(good, p4), HasSubstr("-p = 4: the traces have 2"));
  // Both annotation forms in one trace; a stage count that is not a multiple of the ranks; an
  // order no built-in schedule has.
  bad = good;
  bad[0].annotations.push_back({"Forward 0", 0, 1e-6, 1});
  EXPECT_THAT(Refusal(bad), HasSubstr("both 'PP:' ranges and GPipe's"));
  bad = good;
  bad[1].annotations.push_back({"PP:4F0", 1e-3, 1.1e-3, 1});
  EXPECT_THAT(Refusal(bad), HasSubstr("name 5 stages, not a multiple of their 2 ranks"));
  bad = good;
  std::swap(Named(bad[1], "PP:1F0")->name, Named(bad[1], "PP:1F1")->name);
  EXPECT_THAT(Refusal(bad), HasSubstr("run in the order of no built-in schedule at p = 2, v = 2"));
  PyTorchImportOptions dp2;
  dp2.dp = 2;
  EXPECT_THAT(Refusal(good, dp2), HasSubstr("--dp = 2: the traces hold 1 replica(s) of a 2-rank "
                                            "pipeline"));
}

TEST(PyTorchImport, DataParallelReplicasAreFoundByTheirStagesAndReplicaZeroIsRecorded) {
  // Interleaved 1F1B on 2 pipeline ranks, 3 replicas: global ranks r * 3 + d. Each trace's lowest
  // stage is its pipeline rank; replica 0 (global ranks 0 and 3) is the run.
  const std::vector<SimulatedRun> runs = Simulated({{"interleaved-1f1b", 2, 2, 4, ""}});
  SyntheticTraceOptions options;
  options.dp = 3;
  options.replica_delay_ns = 40'000;  // replica d 40 us x d later: recording another fails
  options.prefix = "dp3";
  const testing::SyntheticTraces written = testing::WriteSyntheticTraces(
      runs[0].program, runs[0].result.trace, runs[0].result.updates, TempDir("dp3"), options);
  ASSERT_EQ(written.paths.size(), 6u);
  std::vector<ChromeTrace> traces = Read(written.paths);
  std::reverse(traces.begin(), traces.end());  // any order
  Result<ImportedRun> run = ImportPyTorchRun(traces, {});
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->config.dp, 3);
  EXPECT_EQ(run->config.p, 2);
  EXPECT_EQ(run->config.schedule, "interleaved-1f1b");
  ExpectSameTimes(*run, runs[0], written.origin, true, "dp3");
  ASSERT_EQ(run->config.traces.size(), 6u);  // every trace named, with its global rank
  for (int g = 0; g < 6; ++g) {
    EXPECT_EQ(run->config.traces[g].rank, g);
    EXPECT_EQ(run->config.traces[g].file, written.paths[g]);
  }
  PyTorchImportOptions two;
  two.dp = 2;
  EXPECT_THAT(Refusal(traces, two),
              ::testing::HasSubstr("--dp = 2: the traces hold 3 replica(s) of a 2-rank pipeline"));
  // A replica that did other work.
  std::vector<ChromeTrace> uneven = traces;
  for (ChromeTrace& t : uneven) {
    if (t.rank == 4) t.annotations.pop_back();
  }
  EXPECT_THAT(Refusal(uneven), ::testing::HasSubstr("is a replica of rank 3 but ran"));
}

TEST(ChromeTrace, ReadsGzipAndPlainAndRefusesWhatIsNotATrace) {
  const std::string dir = TempDir("files");
  const std::string plain = dir + "/plain.json", broken = dir + "/broken.json",
                    other = dir + "/other.json";
  std::ofstream(plain) << R"({"distributedInfo": {"rank": 1, "world_size": 2},
    "traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "PP:1F0", "ts": 10, "dur": 5,
                     "pid": 1, "tid": 1},
                    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 11, "dur": 1},
                    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", "ts": 20,
                     "dur": 2, "args": {"correlation": 7}}],
    "baseTimeNanoseconds": 1700000000000000123})";
  std::ofstream(broken) << R"({"traceEvents": [{"ph": "X", "name": "PP:1F0", "ts": )";
  std::ofstream(other) << R"({"events": []})";
  // Hostile or damaged values are refused naming them, never read as something else.
  const std::pair<std::string, std::string> refused[] = {
      {"0", "no traceEvents array"},
      {R"({"distributedInfo": {"rank": 1e10}, "traceEvents": []})",
       "distributedInfo.rank = 10000000000: not a rank"},
      {R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "PP:0F0"}]})",
       "event 1 'PP:0F0' (user_annotation) has no number ts"},
      {R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "PP:0F0", "ts": 5,
           "dur": -1}]})",
       "has a negative or unreadable dur"}};
  for (const auto& [text, message] : refused) {
    const std::string path = dir + "/refused.json";
    std::ofstream(path) << text;
    const Result<ChromeTrace> trace = ReadChromeTrace(path);
    ASSERT_FALSE(trace.ok()) << text;
    EXPECT_EQ(trace.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(trace.status().message()), ::testing::HasSubstr(message)) << text;
  }
  const Result<ChromeTrace> read = ReadChromeTrace(plain);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->rank, 1);
  EXPECT_EQ(read->world_size, 2);
  // Time 0 is the first kept event, at base + 10 us; times after it exactly.
  EXPECT_EQ(read->origin_ns, 1700000000000000123 + 10'000);
  ASSERT_EQ(read->annotations.size(), 1u);  // aten::mm is not kept
  EXPECT_DOUBLE_EQ(read->annotations[0].start, 0);
  EXPECT_DOUBLE_EQ(read->annotations[0].end, 5e-6);
  EXPECT_DOUBLE_EQ(read->kernels[0].start, 10e-6);
  ASSERT_EQ(read->kernels.size(), 1u);
  EXPECT_TRUE(read->kernels[0].communication);
  EXPECT_EQ(read->kernels[0].correlation, 7);
  EXPECT_EQ(read->sha256.size(), 64u);
  const Result<ChromeTrace> truncated = ReadChromeTrace(broken);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(truncated.status().message()), ::testing::HasSubstr("not JSON at byte"));
  const Result<ChromeTrace> no_events = ReadChromeTrace(other);
  ASSERT_FALSE(no_events.ok());
  EXPECT_THAT(std::string(no_events.status().message()),
              ::testing::HasSubstr("no traceEvents array"));
  const Result<ChromeTrace> missing = ReadChromeTrace(dir + "/missing.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace pipette
