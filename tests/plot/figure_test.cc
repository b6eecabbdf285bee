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

#include "pipette/plot/palette.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/trace_rows.h"

namespace pipette {
namespace {

// A run of `name` timed by evaluate() (F = 1 ms, I = W = 1 ms), with its metrics.
RunData EvaluatedRun(const std::string& name, ScheduleParams params, int id) {
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
  run.run.engine = "sim";
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
  EXPECT_NE(script.find("\"sim run 2 1f1b r1\" 4"), std::string::npos) << "run b below a gap";
  EXPECT_NE(script.find("set terminal svg"), std::string::npos);
  EXPECT_FALSE(FigureScript(PlotKind::kTimeline, {a, b, a}, options).ok());
  RunData empty = a;
  empty.events.clear();
  Result<std::string> none = FigureScript(PlotKind::kTimeline, {empty}, options);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("run 1 has no events"), std::string::npos);
}

TEST(FigureScript, BubbleHasOneLinePerScheduleAndTheAnalyticCurveDashed) {
  std::vector<RunData> runs;
  int id = 1;
  for (int m : {4, 8, 16}) {
    runs.push_back(EvaluatedRun("1f1b", {4, 1, m, 0}, id++));
    runs.push_back(EvaluatedRun("zb-h1", {4, 1, m, 0}, id++));
  }
  PlotOptions options;
  options.out = "b.png";
  const std::string script = *FigureScript(PlotKind::kBubble, runs, options);
  EXPECT_NE(script.find("title \"1f1b\""), std::string::npos);
  EXPECT_NE(script.find("title \"zb-h1\""), std::string::npos);
  EXPECT_NE(script.find("using 1:(4-1.0)/(1*$1+4-1.0) with lines dt 2"), std::string::npos)
      << "1f1b analytic: (p-1)/(vm+p-1)";
  EXPECT_EQ(script.find("zb-h1 analytic"), std::string::npos);
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
  sim1.metrics = {{"step_time_s", 0.090, "s"}};
  meas1.metrics = {{"step_time_s", 0.100, "s"}};  // 10% off
  sim2.metrics = {{"step_time_s", 0.220, "s"}};
  meas2.metrics = {{"step_time_s", 0.200, "s"}};  // 10% off
  PlotOptions options;
  options.out = "c.png";
  const std::string script = *FigureScript(PlotKind::kCompare, {sim1, meas1, sim2, meas2}, options);
  EXPECT_NE(script.find("(2 pairs), MAPE = 10.00%"), std::string::npos) << script;
  EXPECT_NE(script.find("(0.9*$1):(1.1*$1) with filledcurves"), std::string::npos);
  EXPECT_NE(script.find("x with lines"), std::string::npos);
  EXPECT_FALSE(FigureScript(PlotKind::kCompare, {sim1, meas1, sim2}, options).ok());
  EXPECT_DOUBLE_EQ(MeanAbsolutePercentageError({90, 220}, {100, 200}), 10.0);
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
}

TEST(DrawFigure, EveryKindWritesAPngOfTheRequestedSize) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  std::vector<RunData> runs;
  for (int m : {4, 8}) runs.push_back(EvaluatedRun("1f1b", {4, 1, m, 0}, m));
  for (PlotKind kind :
       {PlotKind::kTimeline, PlotKind::kBubble, PlotKind::kMemory, PlotKind::kCompare}) {
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
