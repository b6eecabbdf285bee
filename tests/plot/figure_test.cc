// Figures: the gnuplot scripts (palette, units, one box per event, rank 0 on top, tints, the
// analytic bubble, MAPE) and real PNG/SVG files of the requested size drawn by gnuplot from runs
// built from evaluated schedules.
#include "pipette/plot/figure.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "pipette/plot/palette.h"
#include "pipette/plot/run_labels.h"
#include "pipette/plot/series_encoding.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/trace_rows.h"

namespace pipette {
namespace {

// A run of `name` timed by evaluate() (F = 1 ms, I = W = 1 ms), with its metrics.
RunData EvaluatedRun(const std::string& name, ScheduleParams params, int id,
                     const std::string& engine = "sim") {
  const Schedule schedule = *MakeSchedule(name, params);
  const Program program = *Lower(schedule);
  EvaluateOptions options;
  options.record_timeline = true;
  const Evaluation eval =
      *Evaluate(program, Costs::Uniform(schedule.num_stages(), {1e-3, 1e-3, 1e-3}), options);
  std::vector<TraceEvent> trace;
  for (int r = 0; r < program.p; ++r) {
    for (std::size_t k = 0; k < program.ranks[r].instructions.size(); ++k) {
      TraceEvent e;
      e.rank = r;
      e.instr_id = static_cast<int>(k);
      e.action = program.ranks[r].instructions[k].action;
      e.start = eval.timeline[r][k].start;
      e.end = eval.timeline[r][k].end;
      trace.push_back(e);
    }
  }
  RunData run;
  run.run.id = id;
  run.run.engine = engine;
  run.run.config = fmt::format(
      R"({{"schedule":"{}","pp":{},"v":{},"m":{},"ideal_network":true,"latency_us":0}})", name,
      schedule.p, schedule.v, schedule.m);
  run.events = ToEventRows(program, trace);
  run.metrics = {{"bubble_ratio", eval.bubble_ratio, "fraction"},
                 {"step_time_s", eval.makespan, "s"},
                 {"device_memory_bytes", 80e9, "B"}};
  for (int r = 0; r < program.p; ++r) {
    run.metrics.push_back({fmt::format("peak_memory_bytes[{}]", r), 1e9 * (10 + r), "B"});
  }
  return run;
}

std::string Scratch(const std::string& name) {
  return ::testing::TempDir() + "pipette_plot_" + std::to_string(getpid()) + "_" + name;
}

bool HaveGnuplot() { return std::system("gnuplot --version >/dev/null 2>&1") == 0; }

// Width and height from a PNG's IHDR chunk; {0, 0} if the file is not a PNG.
std::pair<int, int> PngSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[24] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (!in || !std::equal(signature, signature + 8, header)) return {0, 0};
  auto be32 = [&](int at) {
    return (header[at] << 24) | (header[at + 1] << 16) | (header[at + 2] << 8) | header[at + 3];
  };
  return {be32(16), be32(20)};
}

TEST(FigureScript, TimelineDrawsOneBoxPerComputeEventWithRankZeroOnTop) {
  const RunData run = EvaluatedRun("1f1b", {4, 1, 8, 0}, 1);
  PlotOptions options;
  options.out = "t.png";
  const std::string script = *FigureScript(PlotKind::kTimeline, {run}, options);
  const std::size_t begin = script.find("$boxes << EOD\n") + 14;
  const std::size_t end = script.find("EOD\n", begin);
  const std::string boxes = script.substr(begin, end - begin);
  // 4 ranks x 16 compute actions, plus a bar per receive that waited for its data.
  long waits = 0;
  for (const EventRow& e : run.events) {
    waits += (e.kind == EventKind::kRecvF || e.kind == EventKind::kRecvB) && e.end_s > e.start_s;
  }
  EXPECT_GT(waits, 0);
  EXPECT_EQ(std::count(boxes.begin(), boxes.end(), '\n'), 64 + waits);
  EXPECT_NE(script.find("set yrange [3.6:-0.6]"), std::string::npos) << "rank 0 on top";
  EXPECT_NE(script.find("set xlabel \"time [ms]\""), std::string::npos);
  EXPECT_NE(script.find("set ylabel \"rank\""), std::string::npos);
  EXPECT_NE(script.find("#0072B2"), std::string::npos);  // forward: Okabe-Ito blue
  EXPECT_NE(script.find("#E69F00"), std::string::npos);  // backward: orange
  // Rank 1's first forward [1, 2] ms: a box centred at 1.5 on row 1, blue (0x0072B2 = 29362).
  EXPECT_NE(boxes.find("1.5 0.9 1 2 0.6 1.2 29362\n"), std::string::npos) << boxes;
}

TEST(FigureScript, TimelineTintsLaterChunksAndStacksTwoRuns) {
  const RunData a = EvaluatedRun("interleaved-1f1b", {2, 2, 4, 0}, 1);
  const RunData b = EvaluatedRun("1f1b", {2, 1, 4, 0}, 2);
  PlotOptions options;
  options.out = "t.svg";
  const std::string script = *FigureScript(PlotKind::kTimeline, {a, b}, options);
  EXPECT_NE(script.find(" " + std::to_string(palette::Tint(palette::kForward)) + "\n"),
            std::string::npos);
  EXPECT_EQ(palette::Tint(palette::kForward), 0x80B9D9u);
  // Each panel labelled on its header row by engine and what differs (schedule, v); run a's ranks
  // on rows 1 and 2, run b's below its header (row 3) on rows 4 and 5.
  EXPECT_NE(script.find("set ytics (\"r0\" 1, \"r1\" 2, \"r0\" 4, \"r1\" 5)"), std::string::npos)
      << script;
  EXPECT_NE(script.find("set label \"sim schedule=interleaved-1f1b v=2\" at graph 0, first 0 "),
            std::string::npos);
  EXPECT_NE(script.find("set label \"sim schedule=1f1b v=1\" at graph 0, first 3 "),
            std::string::npos);
  EXPECT_NE(script.find("set terminal svg"), std::string::npos);
  const std::vector<RunData> nine(9, a);
  EXPECT_FALSE(FigureScript(PlotKind::kTimeline, nine, options).ok());
  RunData empty = a;
  empty.events.clear();
  Result<std::string> none = FigureScript(PlotKind::kTimeline, {empty}, options);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("run 1 has no events"), std::string::npos);
}

TEST(FigureScript, BubbleDrawsTheAnalyticCurveOnlyWhereTheDataDepartsFromIt) {
  std::vector<RunData> runs;
  int id = 1;
  for (int m : {4, 8, 16}) {
    runs.push_back(EvaluatedRun("1f1b", {4, 1, m, 0}, id++));
    runs.push_back(EvaluatedRun("zb-h1", {4, 1, m, 0}, id++));
  }
  PlotOptions options;
  options.out = "b.png";
  const std::string script = *FigureScript(PlotKind::kBubble, runs, options);
  // The 1f1b points lie on (p-1)/(vm+p-1): no dashed curve, the legend says so.
  EXPECT_NE(script.find("title \"1f1b (= analytic (p-1)/(vm+p-1))\""), std::string::npos) << script;
  EXPECT_EQ(script.find("with lines dt 2"), std::string::npos);
  EXPECT_NE(script.find("title \"zb-h1\""), std::string::npos);
  EXPECT_EQ(script.find("zb-h1 analytic"), std::string::npos);
  // One 1f1b point off the closed form (3/7 at m = 4): the curve is drawn, dashed.
  std::vector<RunData> off = runs;
  off[0].metrics[0].value = 0.5;
  const std::string departs = *FigureScript(PlotKind::kBubble, off, options);
  EXPECT_NE(departs.find("using 1:(4-1.0)/(1*$1+4-1.0) with lines dt 2"), std::string::npos)
      << "1f1b analytic: (p-1)/(vm+p-1)";
  EXPECT_NE(departs.find("title \"1f1b\""), std::string::npos);
  EXPECT_NE(script.find("set ylabel \"bubble ratio [fraction]\""), std::string::npos);
  // The 1f1b points equal the analytic curve: 3/7 at m = 4.
  EXPECT_NE(script.find("4 0.428571429\n"), std::string::npos) << script;
  runs[0].metrics.clear();
  Result<std::string> missing = FigureScript(PlotKind::kBubble, runs, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("run 1 has no metric 'bubble_ratio'"),
            std::string::npos);
}

TEST(FigureScript, MemoryDrawsEveryRankAndTheDeviceLimit) {
  const RunData run = EvaluatedRun("1f1b", {4, 1, 8, 0}, 3);
  PlotOptions options;
  options.out = "m.png";
  const std::string script = *FigureScript(PlotKind::kMemory, {run}, options);
  EXPECT_NE(script.find("0 10\n1 11\n2 12\n3 13\n"), std::string::npos) << script;
  EXPECT_NE(script.find("device memory (80 GB)"), std::string::npos);
  EXPECT_NE(script.find("peak memory [GB]"), std::string::npos);
}

TEST(FigureScript, CompareComputesMapeAndDrawsTheBand) {
  RunData sim1, meas1, sim2, meas2;
  sim1.run.id = 1;
  meas1.run.id = 2;
  sim2.run.id = 3;
  meas2.run.id = 4;
  sim1.metrics = {{"step_time_s", 0.090, "s"}};
  meas1.metrics = {{"step_time_s", 0.100, "s"}};  // 10% off
  sim2.metrics = {{"step_time_s", 0.220, "s"}};
  meas2.metrics = {{"step_time_s", 0.200, "s"}};  // 10% off
  PlotOptions options;
  options.out = "c.png";
  const std::string script = *FigureScript(PlotKind::kCompare, {sim1, meas1, sim2, meas2}, options);
  EXPECT_NE(script.find("(2 pairs), MAPE = 10.00%"), std::string::npos) << script;
  EXPECT_NE(script.find("(0.95*$1):(1.05*$1) with filledcurves"), std::string::npos);
  EXPECT_NE(script.find("title \"+-5%\""), std::string::npos);
  EXPECT_NE(script.find("x with lines"), std::string::npos);
  EXPECT_FALSE(FigureScript(PlotKind::kCompare, {sim1, meas1, sim2}, options).ok());
}

// A run with config {"schedule":..,"pp":2,"v":1,"m":m} on `engine` and step time `step_s`.
RunData StepRun(int id, const std::string& engine, int m, double step_s,
                const std::string& schedule = "1f1b") {
  RunData run;
  run.run.id = id;
  run.run.engine = engine;
  run.run.config = fmt::format(R"({{"schedule":"{}","pp":2,"v":1,"m":{},"steps":2}})", schedule, m);
  run.metrics = {{"step_time_s", step_s, "s"}};
  return run;
}

// The inline data block `name` of a script.
std::string Block(const std::string& script, const std::string& name) {
  const std::size_t begin = script.find(name + " << EOD\n");
  if (begin == std::string::npos) return "";
  const std::size_t from = begin + name.size() + 8;
  return script.substr(from, script.find("EOD\n", from) - from);
}

// A run of `schedule` on `cluster` (and `model`) with step time `step_s`.
RunData ClusterRun(int id, const std::string& cluster, const std::string& schedule, double step_s,
                   const std::string& model = "moe") {
  RunData run = StepRun(id, "sim", 8, step_s, schedule);
  run.run.config = fmt::format(R"({{"schedule":"{}","pp":4,"m":8,"cluster":"{}","model":"{}"}})",
                               schedule, cluster, model);
  return run;
}

TEST(FigureScript, StepTimeGroupsBarsByTheXKeyInRunOrder) {
  PlotOptions options;
  options.x_key = "cluster";
  const std::vector<RunData> runs = {ClusterRun(1, "switch", "1f1b", 0.100),
                                     ClusterRun(2, "switch", "dualpipe-v", 0.080),
                                     ClusterRun(3, "fat-tree-2to1", "1f1b", 0.150),
                                     ClusterRun(4, "fat-tree-2to1", "dualpipe-v", 0.1125)};
  Result<std::string> script = FigureScript(PlotKind::kStepTime, runs, options);
  ASSERT_TRUE(script.ok()) << script.status().message();
  // One row per cluster in run order, one column per schedule, in ms.
  EXPECT_EQ(Block(*script, "$bars"), "\"switch\" 100 80\n\"fat-tree-2to1\" 150 112.5\n");
  EXPECT_NE(script->find("set title \"Step time by cluster (moe)\""), std::string::npos);
  EXPECT_NE(script->find("$bars using 2:xtic(1) lc rgb"), std::string::npos) << *script;
  EXPECT_NE(script->find("title \"dualpipe-v\""), std::string::npos);

  // Two models: the series name the model; a missing bar is gnuplot's missing value.
  std::vector<RunData> mixed = runs;
  mixed.push_back(ClusterRun(5, "switch", "1f1b", 0.050, "dense"));
  script = FigureScript(PlotKind::kStepTime, mixed, options);
  ASSERT_TRUE(script.ok()) << script.status().message();
  EXPECT_EQ(Block(*script, "$bars"), "\"switch\" 100 80 50\n\"fat-tree-2to1\" 150 112.5 ?\n");
  EXPECT_NE(script->find("title \"1f1b dense\""), std::string::npos);

  // Two runs for one bar, or a run without the x key, are refused naming them.
  mixed.push_back(ClusterRun(6, "switch", "1f1b", 0.060, "dense"));
  Result<std::string> twice = FigureScript(PlotKind::kStepTime, mixed, options);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(),
            "runs 5 and 6 are both '1f1b dense' at cluster = switch: a steptime figure takes one "
            "run per bar (select with --run, or a figure's where)");
  options.x_key = "fabric";
  EXPECT_EQ(FigureScript(PlotKind::kStepTime, runs, options).status().message(),
            "run 1: its configuration has no key 'fabric'");
}

TEST(FigureScript, ComparePutsSimulatedOnXAndPairsByConfigurationInAnyOrder) {
  const RunData sim4 = StepRun(1, "sim", 4, 0.090), cpu4 = StepRun(2, "cpu", 4, 0.100);
  const RunData sim8 = StepRun(3, "sim", 8, 0.220), cpu8 = StepRun(4, "cpu", 8, 0.200);
  PlotOptions options;
  options.out = "c.png";
  // Pairs follow the measured runs' order; each point is (simulated, measured) whatever the order.
  const std::string script = *FigureScript(PlotKind::kCompare, {cpu8, sim4, cpu4, sim8}, options);
  EXPECT_EQ(Block(script, "$p0"), "220 200\n") << script;
  EXPECT_EQ(Block(script, "$p1"), "90 100\n") << script;
  EXPECT_NE(script.find("set xlabel \"simulated step time [ms]\""), std::string::npos);
  EXPECT_NE(script.find("set ylabel \"measured (cpu) step time [ms]\""), std::string::npos);
  EXPECT_NE(script.find("(2 pairs), MAPE = 10.00%"), std::string::npos);
  // The legend names what differs (m), not run ids.
  EXPECT_NE(script.find("title \"m=8\""), std::string::npos) << script;
  EXPECT_NE(script.find("title \"m=4\""), std::string::npos);
  EXPECT_EQ(script.find("run 1"), std::string::npos);
  EXPECT_EQ(*FigureScript(PlotKind::kCompare, {cpu4, sim4}, options),
            *FigureScript(PlotKind::kCompare, {sim4, cpu4}, options));
  EXPECT_NE(Block(*FigureScript(PlotKind::kCompare, {cpu4, sim4}, options), "$p0"), "100 90\n");
}

TEST(FigureScript, CompareRefusesRunsThatDoNotPair) {
  const RunData sim4 = StepRun(1, "sim", 4, 0.09), cpu4 = StepRun(2, "cpu", 4, 0.1);
  const RunData sim8 = StepRun(3, "sim", 8, 0.2), again4 = StepRun(5, "sim", 4, 0.1);
  PlotOptions options;
  options.out = "c.png";
  const auto refusal = [&](const std::vector<RunData>& runs) {
    const Result<std::string> script = FigureScript(PlotKind::kCompare, runs, options);
    EXPECT_FALSE(script.ok());
    return script.ok() ? std::string() : std::string(script.status().message());
  };
  EXPECT_EQ(refusal({sim8, cpu4}),
            "--run: run 2 (cpu) has no simulated runs of its configuration among --run ('m' is 4 "
            "in run 2 and 8 in run 3): each measured run pairs with exactly one");
  EXPECT_EQ(refusal({sim4, again4, cpu4}),
            "--run: run 2 (cpu) has several simulated runs of its configuration among --run (runs "
            "1 and 5): each measured run pairs with exactly one");
  EXPECT_EQ(refusal({sim4, cpu4, sim8}),
            "--run: simulated run 3 pairs with no measured run of its configuration among --run");
}

// Two measurements of one configuration and their predictions: each prediction pairs with the run
// it names (costs_from), whatever the order.
TEST(FigureScript, ComparePairsAPredictionWithTheRunItPredicts) {
  RunData cpu2 = StepRun(2, "cpu", 4, 0.010), cpu6 = StepRun(6, "cpu", 4, 0.020);
  RunData sim1 = StepRun(1, "sim", 4, 0.011), sim5 = StepRun(5, "sim", 4, 0.019);
  sim1.run.config.insert(sim1.run.config.size() - 1, R"(,"costs_from":6)");
  sim5.run.config.insert(sim5.run.config.size() - 1, R"(,"costs_from":2)");
  PlotOptions options;
  options.out = "c.png";
  const Result<std::string> script =
      FigureScript(PlotKind::kCompare, {sim1, cpu2, sim5, cpu6}, options);
  ASSERT_TRUE(script.ok()) << script.status().message();
  EXPECT_EQ(Block(*script, "$p0"), "19 10\n");  // run 5 predicts run 2
  EXPECT_EQ(Block(*script, "$p1"), "11 20\n");  // run 1 predicts run 6
}

// A run of a fidelity-like study: `model` (its sequence length follows from it), `schedule` (v
// follows from it), m; step time `step_ms`.
RunData StudyRun(int id, const std::string& engine, const std::string& model,
                 const std::string& schedule, int m, double step_ms) {
  RunData run;
  run.run.id = id;
  run.run.engine = engine;
  const int v = schedule.starts_with("interleaved") || schedule.starts_with("zbv") ? 2 : 1;
  run.run.config = fmt::format(
      R"({{"schedule":"{}","pp":2,"v":{},"m":{},"model":"models/{}.toml","seq_len":{}}})", schedule,
      v, m, model, model == "tiny" ? 32 : 64);
  run.metrics = {{"step_time_s", step_ms / 1e3, "s"}};
  return run;
}

const std::vector<std::string> kTenSchedules = {
    "gpipe",          "1f1b", "eager-1f1b", "zb-h1",     "zb-h2", "interleaved-1f1b",
    "interleaved-zb", "zbv",  "v-half",     "dualpipe-v"};

// The measured runs of 2 models x 10 schedules x m 4, 8 (40 runs, ids from 100).
std::vector<RunData> StudyRuns() {
  std::vector<RunData> runs;
  int id = 100;
  for (const std::string model : {"tiny", "gpt-w256"}) {
    for (const std::string& schedule : kTenSchedules) {
      for (int m : {4, 8}) runs.push_back(StudyRun(id++, "cpu", model, schedule, m, 10.0 * m));
    }
  }
  return runs;
}

TEST(EncodeSeries, ColoursByAKeyWithFewValuesAndSkipsKeysThatFollowFromAnother) {
  const std::vector<RunData> runs = StudyRuns();
  std::vector<const RunData*> ptrs;
  for (const RunData& run : runs) ptrs.push_back(&run);
  // Ten schedules are more than eight colours: colour by model, marker by m; v follows from the
  // schedule and the sequence length from the model, so neither is chosen.
  Result<SeriesEncoding> enc = EncodeSeries(ptrs, "", "", 10);
  ASSERT_TRUE(enc.ok()) << enc.status().message();
  EXPECT_EQ(enc->colour_key, "model");
  EXPECT_EQ(enc->colour_values, (std::vector<std::string>{"model=tiny", "model=gpt-w256"}));
  EXPECT_EQ(enc->marker_key, "m");
  EXPECT_EQ(enc->marker_values, (std::vector<std::string>{"m=4", "m=8"}));
  EXPECT_EQ(enc->LegendEntries(), 4);
  EXPECT_EQ(enc->colour[0], 0);
  EXPECT_EQ(enc->colour[20], 1);
  EXPECT_EQ(enc->marker[0], 0);
  EXPECT_EQ(enc->marker[1], 1);

  // Eight schedules or fewer: colour by schedule; then the model marks them (m would do too, but
  // the model comes first).
  const std::vector<const RunData*> eight(ptrs.begin(), ptrs.begin() + 16);
  std::vector<const RunData*> two_models = eight;
  two_models.insert(two_models.end(), ptrs.begin() + 20, ptrs.begin() + 36);
  enc = EncodeSeries(two_models, "", "", 10);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(enc->colour_key, "schedule");
  EXPECT_EQ(enc->colour_values.size(), 8u);
  EXPECT_EQ(enc->marker_key, "model");
  // A budget of 9 entries leaves no room for a second key.
  enc = EncodeSeries(two_models, "", "", 9);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(enc->marker_key, "");
  EXPECT_EQ(enc->LegendEntries(), 8);

  // Given keys, and their refusals naming the key and the rule.
  enc = EncodeSeries(ptrs, "m", "none", 10);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(enc->colour_key, "m");
  EXPECT_EQ(enc->marker_key, "");
  EXPECT_EQ(EncodeSeries(ptrs, "schedule", "", 10).status().message(),
            "--colour-by = 'schedule': the runs have 10 values of it, a figure tells at most 8 "
            "colours apart (choose a key with fewer values, or none)");
  EXPECT_EQ(EncodeSeries(ptrs, "", "cluster", 10).status().message(),
            "--marker-by = 'cluster': run 100 has no configuration key 'cluster'");
  EXPECT_EQ(
      EncodeSeries(ptrs, "m", "m", 10).status().message(),
      "--marker-by = 'm': already the colour key (--colour-by); encode a second key, or none");
  // A marker key given, the colour chosen among the others.
  enc = EncodeSeries(ptrs, "", "model", 10);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(enc->colour_key, "m");
}

// 40 pairs: the legend has a colour per model with its MAPE and a marker per m, 8 entries at most
// with the band and y = x; every pair drawn once.
TEST(FigureScript, CompareOfManyPairsEncodesTheKeysThatVary) {
  std::vector<RunData> runs = StudyRuns();
  const std::size_t measured = runs.size();
  for (std::size_t k = 0; k < measured; ++k) {
    RunData sim = runs[k];
    sim.run.id = runs[k].run.id + 1000;
    sim.run.engine = "sim";
    // tiny predicted 10% short, gpt-w256 2% long
    const double factor = k < 20 ? 0.9 : 1.02;
    sim.metrics = {{"step_time_s", runs[k].metrics[0].value * factor, "s"}};
    runs.push_back(sim);
  }
  PlotOptions options;
  options.out = "c.png";
  const Result<std::string> script = FigureScript(PlotKind::kCompare, runs, options);
  ASSERT_TRUE(script.ok()) << script.status().message();
  EXPECT_NE(script->find("(40 pairs), MAPE = 6.00%"), std::string::npos) << *script;
  EXPECT_NE(script->find("title \"model=tiny: MAPE 10.00% (20)\""), std::string::npos);
  EXPECT_NE(script->find("title \"model=gpt-w256: MAPE 2.00% (20)\""), std::string::npos);
  EXPECT_NE(script->find("keyentry with points pt 7 ps 1.5 lc rgb \"#555555\" title \"m=8\""),
            std::string::npos);
  std::size_t titled = 0, points = 0;
  for (std::size_t at = script->find(" title \""); at != std::string::npos;
       at = script->find(" title \"", at + 1)) {
    ++titled;
  }
  EXPECT_EQ(titled, 2u + 2u + 2u + 1u);  // band, y = x, 2 colours, 2 markers; and the plot title
  // Four groups (model x m) of ten points: each pair once, the tiny m = 4 ones at (36, 40).
  for (int g = 0; g < 4; ++g) {
    const std::string block = Block(*script, fmt::format("$g{}", g));
    points += static_cast<std::size_t>(std::count(block.begin(), block.end(), '\n'));
  }
  EXPECT_EQ(points, 40u);
  std::string tiny_m4;
  for (int k = 0; k < 10; ++k) tiny_m4 += "36 40\n";
  EXPECT_EQ(Block(*script, "$g0"), tiny_m4);
  // Asked for: one colour per m and no marker key.
  options.colour_by = "m";
  options.marker_by = "none";
  const std::string by_m = *FigureScript(PlotKind::kCompare, runs, options);
  EXPECT_NE(by_m.find("title \"m=4: MAPE 6.00% (20)\""), std::string::npos) << by_m;
  EXPECT_EQ(by_m.find("#555555"), std::string::npos);
  options.colour_by = "schedule";
  EXPECT_FALSE(FigureScript(PlotKind::kCompare, runs, options).ok());
}

// Errors by schedule: each group's MAPE as a bar, its worst pair labelled with its sign; the title
// names the worst of all.
TEST(FigureScript, ErrorsGroupsThePairsByAKeyAndMarksTheWorst) {
  std::vector<RunData> runs;
  const std::vector<std::pair<std::string, double>> cases = {
      {"1f1b", 0.98}, {"1f1b", 1.04}, {"zb-h1", 0.90}, {"zb-h1", 1.02}, {"zbv", 1.01}};
  for (std::size_t k = 0; k < cases.size(); ++k) {
    // Each pair its own m, so that pairs are told apart by configuration.
    const int id = 2 * static_cast<int>(k) + 1, m = 4 * id;
    runs.push_back(StudyRun(id, "cpu", "tiny", cases[k].first, m, 100));
    runs.push_back(StudyRun(id + 1, "sim", "tiny", cases[k].first, m, 100 * cases[k].second));
  }
  PlotOptions options;
  options.out = "e.png";
  options.x_key = "schedule";
  const Result<std::string> script = FigureScript(PlotKind::kErrors, runs, options);
  ASSERT_TRUE(script.ok()) << script.status().message();
  EXPECT_EQ(Block(*script, "$errors"),
            "\"1f1b\" 3 4 \"+4.0%\" 2\n\"zb-h1\" 6 10 \"-10.0%\" 2\n\"zbv\" 1 1 \"+1.0%\" 1\n");
  EXPECT_NE(script->find("set title \"Prediction error by schedule (5 pairs, MAPE 3.80%, worst "
                         "-10.00% at schedule=zb-h1)\""),
            std::string::npos)
      << *script;
  EXPECT_NE(script->find("first 3.8 to graph 1, first 3.8 nohead"), std::string::npos);
  EXPECT_NE(script->find("title \"all pairs: MAPE 3.80%\""), std::string::npos);
  options.x_key = "cluster";
  EXPECT_EQ(FigureScript(PlotKind::kErrors, runs, options).status().message(),
            "run 1: its configuration has no key 'cluster'");
}

TEST(RunLabels, NameTheEngineAndTheKeysThatDiffer) {
  const RunData sim4 = StepRun(1, "sim", 4, 1), sim8 = StepRun(2, "sim", 8, 1);
  const RunData cpu4 = StepRun(3, "cpu", 4, 1);
  EXPECT_EQ(RunLabels({&sim4, &sim8, &cpu4}, false),
            (std::vector<std::string>{"sim m=4", "sim m=8", "cpu m=4"}));
  EXPECT_EQ(RunLabels({&sim4, &sim8}, false), (std::vector<std::string>{"m=4", "m=8"}));
  EXPECT_EQ(RunLabels({&sim4, &sim8}, true), (std::vector<std::string>{"sim m=4", "sim m=8"}));
  // Nothing differs: the program, told apart by run id.
  const RunData again4 = StepRun(9, "sim", 4, 1);
  EXPECT_EQ(RunLabels({&sim4, &again4}, false),
            (std::vector<std::string>{"schedule=1f1b pp=2 v=1 m=4 (run 1)",
                                      "schedule=1f1b pp=2 v=1 m=4 (run 9)"}));
  EXPECT_EQ(RunLabels({&cpu4}, true), (std::vector<std::string>{"cpu schedule=1f1b pp=2 v=1 m=4"}));
  EXPECT_TRUE(SameConfiguration(sim4, cpu4));
  EXPECT_FALSE(SameConfiguration(sim4, sim8));
}

TEST(Palette, MoreThanEightSeriesKeepDistinctColourAndMarkerPairs) {
  std::set<std::pair<std::uint32_t, int>> seen;
  for (int k = 0; k < 96; ++k) {
    const palette::SeriesStyle style = palette::Series(k);
    EXPECT_TRUE(seen.insert({style.colour, style.point_type}).second) << k;
  }
  EXPECT_EQ(palette::Series(8).colour, palette::Series(0).colour);
  EXPECT_NE(palette::Series(8).point_type, palette::Series(0).point_type);
  // The memory figure of ten runs: series 0 and 8 share a colour, not a marker.
  std::vector<RunData> runs;
  for (int m = 1; m <= 10; ++m) runs.push_back(EvaluatedRun("1f1b", {2, 1, m, 0}, m));
  PlotOptions options;
  options.out = "m.png";
  const std::string script = *FigureScript(PlotKind::kMemory, runs, options);
  EXPECT_NE(script.find("$m0 using 1:2 with linespoints lw 2 pt 5 lc rgb \"#0072B2\" title "
                        "\"m=1\""),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("$m8 using 1:2 with linespoints lw 2 pt 7 lc rgb \"#0072B2\" title "
                        "\"m=9\""),
            std::string::npos);
}

TEST(FigureScript, TimelineStepDrawsOneStepFromItsStartAndStacksManyRuns) {
  RunData one = EvaluatedRun("1f1b", {2, 1, 2, 0}, 1);
  RunData two = one;  // the same step again, 1 s later, as step 1
  for (EventRow e : one.events) {
    e.step = 1;
    e.start_s += 1;
    e.end_s += 1;
    two.events.push_back(e);
  }
  PlotOptions options;
  options.out = "t.png";
  options.step = 1;
  const std::string step1 = *FigureScript(PlotKind::kTimeline, {two}, options);
  options.step = 0;
  EXPECT_EQ(Block(step1, "$boxes"),
            Block(*FigureScript(PlotKind::kTimeline, {one}, options), "$boxes"));
  EXPECT_NE(step1.find("(step 1, from its start)"), std::string::npos);
  EXPECT_NE(step1.find("set xlabel \"time from the step's start [ms]\""), std::string::npos);
  options.step = 2;
  const Result<std::string> missing = FigureScript(PlotKind::kTimeline, {two}, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "--step = 2: run 1 has no events of that step (its last traced step is 1)");
  // Three runs: three panels, two separators, every panel named by engine and what differs.
  options.step = 0;
  RunData cpu = one, m4 = EvaluatedRun("1f1b", {2, 1, 4, 0}, 3);
  cpu.run.engine = "cpu";
  cpu.run.id = 2;
  const std::string three = *FigureScript(PlotKind::kTimeline, {one, cpu, m4}, options);
  EXPECT_NE(three.find("\"r0\" 1, \"r1\" 2, \"r0\" 4, \"r1\" 5, \"r0\" 7, \"r1\" 8)"),
            std::string::npos)
      << three;
  for (const char* label : {"\"sim m=2\" at graph 0, first 0 ", "\"cpu m=2\" at graph 0, first 3 ",
                            "\"sim m=4\" at graph 0, first 6 "}) {
    EXPECT_NE(three.find(std::string("set label ") + label), std::string::npos) << label;
  }
  // Rank 0's F of microbatch 1 in the cpu panel ([1, 2] ms) sits on row 4.
  EXPECT_NE(Block(three, "$boxes").find("1.5 3.9 1 2 3.6 4.2 29362\n"), std::string::npos);
  std::size_t arrows = 0;
  for (std::size_t at = three.find("set arrow"); at != std::string::npos;
       at = three.find("set arrow", at + 1)) {
    ++arrows;
  }
  EXPECT_EQ(arrows, 2u);
  EXPECT_NE(three.find("set title \"Pipeline timelines of 3 runs (step 0, from its start)\""),
            std::string::npos);
}

TEST(FigureScript, RejectsBadOptions) {
  const RunData run = EvaluatedRun("1f1b", {2, 1, 2, 0}, 1);
  PlotOptions options;
  options.out = "figure.jpg";
  Result<std::string> jpg = FigureScript(PlotKind::kTimeline, {run}, options);
  ASSERT_FALSE(jpg.ok());
  EXPECT_NE(jpg.status().message().find("--out = 'figure.jpg'"), std::string::npos);
  options.out = "f.png";
  options.width = 20;
  EXPECT_FALSE(FigureScript(PlotKind::kTimeline, {run}, options).ok());
  EXPECT_FALSE(FigureScript(PlotKind::kTimeline, {}, PlotOptions{}).ok());
  EXPECT_FALSE(ParsePlotKind("pie").ok());
  EXPECT_EQ(*ParsePlotKind("memory"), PlotKind::kMemory);
  EXPECT_EQ(*ParsePlotKind("errors"), PlotKind::kErrors);
}

TEST(DrawFigure, EveryKindWritesAPngOfTheRequestedSize) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  std::vector<RunData> runs;
  for (int m : {4, 8}) runs.push_back(EvaluatedRun("1f1b", {4, 1, m, 0}, m));
  for (PlotKind kind : {PlotKind::kTimeline, PlotKind::kBubble, PlotKind::kMemory,
                        PlotKind::kCompare, PlotKind::kStepTime, PlotKind::kErrors}) {
    PlotOptions options;
    options.out = Scratch(std::to_string(static_cast<int>(kind)) + ".png");
    options.width = 900;
    options.height = 500;
    const std::vector<RunData> input =
        kind == PlotKind::kTimeline ? std::vector<RunData>{runs[0]} : runs;
    Status drawn = DrawFigure(kind, input, options);
    ASSERT_TRUE(drawn.ok()) << drawn.message();
    EXPECT_EQ(PngSize(options.out), std::make_pair(900, 500)) << static_cast<int>(kind);
    std::filesystem::remove(options.out);
  }
}

TEST(DrawFigure, WritesSvg) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  PlotOptions options;
  options.out = Scratch("t.svg");
  options.width = 640;
  options.height = 300;
  ASSERT_TRUE(
      DrawFigure(PlotKind::kTimeline, {EvaluatedRun("zb-h1", {2, 1, 4, 0}, 1)}, options).ok());
  std::ifstream in(options.out);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("width=\"640\""), std::string::npos);
  std::filesystem::remove(options.out);
}

// --size is checked as the user wrote it: "0x0" is reported as "0x0", not as the default height.
TEST(ParsePlotSize, ReportsTheSizeAsGiven) {
  const Result<PlotSize> size = ParsePlotSize("900x500");
  ASSERT_TRUE(size.ok()) << size.status().message();
  EXPECT_EQ(size->width, 900);
  EXPECT_EQ(size->height, 500);
  EXPECT_EQ(ParsePlotSize("1200x0")->height, 0);  // the figure's default
  for (const char* bad : {"0x0", "1200x50", "99x600", "10001x600", "1200x99999999999", "x600",
                          "1200x", "1200", "+1200x600", "1200x600 ", ""}) {
    const Result<PlotSize> refused = ParsePlotSize(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(
        refused.status().message().find(fmt::format("--size = '{}': must be WIDTHxHEIGHT", bad)),
        std::string::npos)
        << refused.status().message();
  }
}

TEST(GnuplotReason, IsGnuplotsErrorLineWithWhatFollows) {
  EXPECT_EQ(GnuplotReason("set output \"/no/such/dir/t.png\"\n"
                          "                                 ^\n"
                          "\"/dev/stdin\" line 2: cannot open file; output not changed\n"
                          "system error: No such file or directory\n\n"),
            "cannot open file; output not changed (line 2 of the script; system error: No such "
            "file or directory)");
  EXPECT_EQ(GnuplotReason("\n\"/dev/stdin\" line 3: undefined function: foo\n\n"),
            "undefined function: foo (line 3 of the script)");
  EXPECT_EQ(GnuplotReason("Segmentation fault\n"), "Segmentation fault");
  EXPECT_EQ(GnuplotReason(""), "it printed nothing");
}

// The first line of DrawFigure's error is gnuplot's reason, not the script line it echoes.
TEST(DrawFigure, FailureSaysGnuplotsReasonOnTheFirstLine) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  PlotOptions options;
  options.out = Scratch("no/such/dir/t.png");
  const Status drawn =
      DrawFigure(PlotKind::kTimeline, {EvaluatedRun("1f1b", {2, 1, 2, 0}, 1)}, options);
  ASSERT_FALSE(drawn.ok());
  EXPECT_EQ(drawn.code(), StatusCode::kIoError);
  const std::string first = drawn.message().substr(0, drawn.message().find('\n'));
  EXPECT_NE(first.find("gnuplot failed (exit"), std::string::npos) << drawn.message();
  EXPECT_NE(first.find("cannot open file"), std::string::npos) << drawn.message();
  EXPECT_NE(first.find("No such file or directory"), std::string::npos) << drawn.message();
}

}  // namespace
}  // namespace pipette
