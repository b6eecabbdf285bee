// Exports of a run: the Chrome trace has one X event per executed instruction (an overlapped cell
// is one event) and no overlapping events on a track; the executed compute CSV of a run equals
// the schedule's own CSV (ranks run their programs in order). Runs come from evaluate()'s timing
// of real schedules, including DualPipe's overlapped cells.
#include "pipette/store/trace_export.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/store/trace_rows.h"

namespace pipette {
namespace {

struct Timed {
  Schedule schedule;
  Program program;
  RunData run;
};

Timed TimedRun(const std::string& name, ScheduleParams params, double latency) {
  Timed t;
  t.schedule = *MakeSchedule(name, params);
  t.program = *Lower(t.schedule);
  EvaluateOptions options;
  options.record_timeline = true;
  options.p2p_latency = latency;
  const Evaluation eval =
      *Evaluate(t.program, Costs::Uniform(t.schedule.num_stages(), {1, 1, 1}), options);
  std::vector<TraceEvent> trace;
  for (int r = 0; r < t.program.p; ++r) {
    const auto& ins = t.program.ranks[r].instructions;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      TraceEvent e;
      e.rank = r;
      e.instr_id = static_cast<int>(k);
      e.action = ins[k].action;
      e.start = eval.timeline[r][k].start;
      e.end = eval.timeline[r][k].end;
      e.bytes = IsCompute(ins[k].action.kind) ? 0 : 1024;
      trace.push_back(e);
    }
  }
  std::vector<AllReduceEvent> allreduces;
  for (int r = 0; r < t.program.p; ++r) {
    allreduces.push_back({r, 0, eval.makespan, eval.makespan + 2, 1 << 20});
  }
  t.run.run.id = 7;
  t.run.run.engine = "sim";
  t.run.events = ToEventRows(t.program, trace, allreduces);
  return t;
}

// The Chrome trace of `run` as WriteChromeTrace streams it; FailedPrecondition as it returns.
Result<std::string> ChromeTrace(const RunData& run) {
  std::ostringstream out;
  PIPETTE_RETURN_IF_ERROR(WriteChromeTrace(out, run));
  return out.str();
}

TEST(ChromeTrace, OneEventPerInstructionAndNoOverlapOnATrack) {
  for (const auto& [name, params] :
       {std::pair{std::string("dualpipe"), ScheduleParams{4, 0, 8, 0}},
        std::pair{std::string("interleaved-1f1b"), ScheduleParams{4, 2, 8, 0}},
        std::pair{std::string("zb-h1"), ScheduleParams{4, 0, 8, 0}}}) {
    SCOPED_TRACE(name);
    const Timed t = TimedRun(name, params, 0.25);
    const auto json = nlohmann::json::parse(*ChromeTrace(t.run));
    std::size_t x_events = 0, overlapped = 0;
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
    for (const auto& e : json["traceEvents"]) {
      if (e["ph"] != "X") continue;
      ++x_events;
      overlapped += e["name"].get<std::string>().front() == '(';
      const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
      EXPECT_GE(dur, 0);
      tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back({ts, ts + dur});
    }
    EXPECT_EQ(x_events, t.program.num_instructions() + t.program.p);  // + one all-reduce per rank
    if (name == "dualpipe") {
      EXPECT_GT(overlapped, 0u);
    }
    for (auto& [track, spans] : tracks) {
      std::sort(spans.begin(), spans.end());
      for (std::size_t k = 1; k < spans.size(); ++k) {
        EXPECT_LE(spans[k - 1].second, spans[k].first + 1e-9)
            << "rank " << track.first << " track " << track.second;
      }
    }
    // Every rank is a named process.
    int processes = 0;
    for (const auto& e : json["traceEvents"]) processes += e["name"] == "process_name";
    EXPECT_EQ(processes, t.program.p);
  }
}

TEST(ChromeTrace, EventsCarryTimesInMicrosecondsAndTheirIds) {
  const Timed t = TimedRun("1f1b", {2, 1, 2, 0}, 0);
  const auto json = nlohmann::json::parse(*ChromeTrace(t.run));
  bool found = false;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "1F0") {  // stage 1's forward of microbatch 0: [1, 2]
      EXPECT_EQ(e["ts"].get<double>(), 1e6);
      EXPECT_EQ(e["dur"].get<double>(), 1e6);
      EXPECT_EQ(e["pid"], 1);
      EXPECT_EQ(e["args"]["stage"], 1);
      EXPECT_EQ(e["args"]["microbatch"], 0);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(ChromeTrace, ARunWithoutEventsIsAnError) {
  RunData empty;
  empty.run.id = 3;
  std::ostringstream out;
  const Status status = WriteChromeTrace(out, empty);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("run 3 has no events"), std::string::npos);
  EXPECT_EQ(out.str(), "");  // nothing written
}

// The trace is streamed event by event; its bytes are those of the whole document nlohmann's
// dump() gave before (the golden file was written by that code): DualPipe's overlapped cells, a
// second receive lane, all-reduces, fractional times.
TEST(ChromeTrace, StreamedBytesEqualTheWholeDocument) {
  const Timed t = TimedRun("dualpipe", {2, 0, 4, 0}, 0.25);
  std::ifstream golden(std::string(PIPETTE_GOLDEN_DIR) + "/chrome_trace_dualpipe_p2_m4.json",
                       std::ios::binary);
  const std::string expected((std::istreambuf_iterator<char>(golden)),
                             std::istreambuf_iterator<char>());
  ASSERT_EQ(expected.size(), 6607u);
  EXPECT_EQ(*ChromeTrace(t.run), expected);
  EXPECT_NE(expected.find(R"x({"name":"(3F3;0B0)","cat":"compute","ph":"X","ts":)x"),
            std::string::npos);
  EXPECT_NE(expected.find(R"("args":{"name":"recv 1"})"), std::string::npos);
}

// A stream that fails stops the writer with IoError.
TEST(ChromeTrace, AFailedStreamIsAnIoError) {
  const Timed t = TimedRun("1f1b", {2, 1, 2, 0}, 0);
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(WriteChromeTrace(out, t.run).code(), StatusCode::kIoError);
}

TEST(ExecutedComputeCsv, EqualsTheScheduleCsvForEverySchedule) {
  int checked = 0;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    ScheduleParams params{4, g->default_v(), 8, 0};
    if (!g->Check(params).ok()) continue;
    const Timed t = TimedRun(std::string(g->name()), params, 0.5);
    Result<std::string> csv = ToExecutedComputeCsv(t.run);
    ASSERT_TRUE(csv.ok()) << g->name() << ": " << csv.status().message();
    EXPECT_EQ(*csv, ToComputeCsv(t.schedule)) << g->name();
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

}  // namespace
}  // namespace pipette
