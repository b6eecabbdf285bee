// `pipette import pytorch` end to end: traces written in PyTorch's format from a simulated run are
// imported as a run of engine "pytorch", which `simulate --costs-from` replays to the same step
// time (a round trip) and `compare` joins instruction by instruction; a mismatch exits 2 and a
// damaged file 1, with nothing recorded.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "import/pytorch_trace_writer.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/trace_rows.h"
#include "pipette_runner.h"
#include "sim/simulator.h"

namespace pipette {
namespace {

using testing::Contains;
using testing::Pipette;
using testing::ScratchDir;

// The traces of a simulated 1F1B run (p = 2, m = 4, three steps, stage costs that differ, a
// parameter update per rank), in the scratch directory.
std::vector<std::string> OneFOneBTraces() {
  static const Program program = *Lower(*MakeSchedule("1f1b", {2, 1, 4}));
  SimulationCase sim;
  sim.program = &program;
  sim.costs = Costs::Uniform(2, {2e-3, 1.5e-3, 1e-3});
  sim.costs.stages[1].f = 2.5e-3;
  sim.latency = 1e-4;
  sim.steps = 3;
  sim.step_barrier = true;
  sim.optimizer = {5e-4, 6e-4};
  Result<std::vector<SimulationResult>> result = Simulate({sim});
  EXPECT_TRUE(result.ok()) << result.status().message();
  testing::SyntheticTraceOptions options;
  options.base_ns = {0, 250'000};
  return testing::WriteSyntheticTraces(program, result->front().trace, result->front().updates,
                                       ScratchDir(), options)
      .paths;
}

int Runs(const std::string& db) {
  const testing::CommandResult runs = Pipette("runs --db " + db + " --format json");
  return static_cast<int>(nlohmann::json::parse(runs.out).size());
}

TEST(ImportCli, AnImportedRunReplaysToItsOwnStepTimeAndMismatchesRecordNothing) {
  const std::vector<std::string> traces = OneFOneBTraces();
  const std::string both = traces[0] + " " + traces[1];
  const testing::CommandResult imported =
      Pipette("import pytorch " + both + " --db import.db --format json");
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const nlohmann::json run = nlohmann::json::parse(imported.out);
  EXPECT_EQ(run["run"], 1);
  EXPECT_EQ(run["config"]["engine"], "pytorch");
  EXPECT_EQ(run["config"]["schedule"], "1f1b");
  EXPECT_EQ(run["config"]["traces"].size(), 2u);
  EXPECT_EQ(run["config"]["traces"][1]["sha256"].get<std::string>().size(), 64u);
  const double measured = run["step_time_s"];
  const testing::CommandResult replay =
      Pipette("simulate --costs-from 1 --db import.db --format json");
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const nlohmann::json steps = nlohmann::json::parse(replay.out);
  ASSERT_EQ(steps["step_time_s"].size(), 3u);
  for (std::size_t s = 0; s < 3; ++s) {  // predicted against measured, step by step
    EXPECT_NEAR(steps["step_time_s"][s].get<double>(), measured, 1e-6 * measured) << s;
    EXPECT_NEAR(steps["measured_step_time_s"][s].get<double>(), measured, 1e-6 * measured) << s;
  }
  const testing::CommandResult compare = Pipette("compare 2 1 --db import.db");
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_TRUE(Contains(compare.out, "error +0.00%")) << compare.out;
  EXPECT_EQ(Runs("import.db"), 2);

  // One rank's trace twice: exit 2 naming it, nothing recorded.
  const testing::CommandResult twice =
      Pipette("import pytorch " + traces[0] + " " + traces[0] + " --db import.db");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_TRUE(Contains(twice.err, "both claim rank 0")) << twice.err;
  // Options the traces contradict, and a schedule they did not run.
  const testing::CommandResult wrong_m = Pipette("import pytorch " + both + " -m 8 --db import.db");
  EXPECT_EQ(wrong_m.exit_code, 2);
  EXPECT_TRUE(Contains(wrong_m.err, "-m = 8: the traces have 4")) << wrong_m.err;
  const testing::CommandResult gpipe =
      Pipette("import pytorch " + both + " --schedule gpipe --db import.db");
  EXPECT_EQ(gpipe.exit_code, 2);
  EXPECT_TRUE(Contains(gpipe.err, "in schedule gpipe")) << gpipe.err;
  // Not a trace: exit 2; a damaged gzip stream: exit 1.
  std::ofstream(ScratchDir() + "/not-a-trace.json") << "{\"traceEvents\": [";
  const testing::CommandResult broken =
      Pipette("import pytorch not-a-trace.json " + traces[1] + " --db import.db");
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_TRUE(Contains(broken.err, "not a Chrome trace")) << broken.err;
  {
    std::ifstream in(traces[0]);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    gzFile out = gzopen((ScratchDir() + "/whole.json.gz").c_str(), "wb");
    gzwrite(out, text.data(), static_cast<unsigned>(text.size()));
    gzclose(out);
    std::ifstream whole(ScratchDir() + "/whole.json.gz", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(whole)), {});
    std::ofstream(ScratchDir() + "/cut.json.gz", std::ios::binary)
        << bytes.substr(0, bytes.size() / 2);
  }
  const testing::CommandResult gz =
      Pipette("import pytorch whole.json.gz " + traces[1] + " --db other.db --format json");
  EXPECT_EQ(gz.exit_code, 0) << gz.err;
  const testing::CommandResult cut =
      Pipette("import pytorch cut.json.gz " + traces[1] + " --db import.db");
  EXPECT_EQ(cut.exit_code, 1) << cut.err;
  EXPECT_TRUE(Contains(cut.err, "truncated gzip")) << cut.err;
  EXPECT_EQ(Runs("import.db"), 2);  // nothing half-written
}

// mpirun with the flags a 2-core CI machine running as root needs.
std::string Launcher() {
  return std::string(PIPETTE_MPIEXEC) + " --oversubscribe" +
         (geteuid() == 0 ? " --allow-run-as-root" : "");
}

// The CPU engine's own run written as PyTorch would have traced it, imported: every event comes
// back at its time under its id, and the replays of the two runs are the same prediction (so an
// imported run is predicted within the CPU engine's own tolerance).
TEST(ImportMpiCli, ACpuEngineRunRoundTripsThroughPyTorchTraces) {
  const testing::CommandResult trained =
      testing::Shell(Launcher() + " -np 2 " + PIPETTE_BINARY +
                     " train -p 2 -m 4 --schedule zb-h1 --steps 4 --trace-steps 4 --db cpu.db");
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  Result<ExperimentDb> db = ExperimentDb::Open(ScratchDir() + "/cpu.db");
  ASSERT_TRUE(db.ok()) << db.status().message();
  const RunData cpu = *db->LoadRun(1);
  std::vector<TraceEvent> trace;
  std::vector<AllReduceEvent> updates;
  for (const EventRow& e : cpu.events) {
    if (e.kind == EventKind::kOptimizer) {
      updates.push_back({e.rank, e.step, e.start_s, e.end_s, 0});
    } else {
      trace.push_back({e.rank, e.instr_id, e.step,
                       Action::Make(ActionKindOf(e.kind), e.stage, e.microbatch), e.start_s,
                       e.end_s, e.bytes});
    }
  }
  const Program program = *Lower(*MakeSchedule("zb-h1", {2, 1, 4}));
  testing::SyntheticTraceOptions options;
  options.prefix = "cpu";
  const testing::SyntheticTraces written =
      testing::WriteSyntheticTraces(program, trace, updates, ScratchDir(), options);
  const testing::CommandResult imported =
      Pipette("import pytorch " + written.paths[0] + " " + written.paths[1] + " --db cpu.db");
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  db = ExperimentDb::Open(ScratchDir() + "/cpu.db");
  const RunData back = *db->LoadRun(2);
  EXPECT_EQ(back.run.engine, "pytorch");
  ASSERT_EQ(back.events.size(), cpu.events.size());
  std::map<std::tuple<int, int, int, int>, const EventRow*> by_id;
  for (const EventRow& e : cpu.events) {
    by_id[{e.rank, e.step, e.instr_id, static_cast<int>(e.kind)}] = &e;
  }
  for (const EventRow& e : back.events) {
    const auto found = by_id.find({e.rank, e.step, e.instr_id, static_cast<int>(e.kind)});
    ASSERT_NE(found, by_id.end()) << e.rank << " " << e.step << " " << e.instr_id;
    // SENDs and RECVs posted at one moment are written 10 ns apart.
    EXPECT_NEAR(e.start_s, found->second->start_s - written.origin, 1e-7) << e.instr_id;
    EXPECT_NEAR(e.end_s, found->second->end_s - written.origin, 1e-7) << e.instr_id;
  }
  // Replayed from either run: the same prediction, against the same measured steps.
  const nlohmann::json from_cpu =
      nlohmann::json::parse(Pipette("simulate --costs-from 1 --db cpu.db --format json").out);
  const nlohmann::json from_import =
      nlohmann::json::parse(Pipette("simulate --costs-from 2 --db cpu.db --format json").out);
  ASSERT_EQ(from_cpu["step_time_s"].size(), 4u);
  ASSERT_EQ(from_import["step_time_s"].size(), 4u);
  for (std::size_t s = 1; s < 4; ++s) {
    const double predicted = from_cpu["step_time_s"][s],
                 measured = from_cpu["measured_step_time_s"][s];
    EXPECT_NEAR(from_import["step_time_s"][s].get<double>(), predicted, 1e-3 * predicted) << s;
    EXPECT_NEAR(from_import["measured_step_time_s"][s].get<double>(), measured, 1e-3 * measured)
        << s;
  }
}

}  // namespace
}  // namespace pipette
