// Experiment-store insert rate: one run's event rows written by FinishRun (one transaction,
// prepared statements) into a fresh WAL database on disk, reported as events per second. The
// issue's target is 500k events/s. Arguments: events per run (a 1024-GPU simulation writes
// millions).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "pipette/store/experiment_db.h"

namespace {

using namespace pipette;

RunData Events(std::int64_t n) {
  RunData data;
  data.events.reserve(n);
  for (std::int64_t k = 0; k < n; ++k) {
    const int rank = static_cast<int>(k % 64);
    data.events.push_back({rank, 0, static_cast<int>(k / 64), static_cast<EventKind>(k % 8), rank,
                           0, static_cast<int>(k / 512), 1e-3 * k, 1e-3 * k + 5e-4,
                           (k % 8) >= 4 ? 8 << 20 : 0});
  }
  data.metrics = {{"step_time_s", 1.0, "s"}};
  return data;
}

void BM_FinishRunInsert(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const RunData data = Events(n);
  const std::string path =
      std::filesystem::temp_directory_path() / ("pipette_store_bench_" + std::to_string(getpid()));
  for (auto _ : state) {
    state.PauseTiming();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    ExperimentDb db = *ExperimentDb::Open(path);
    RunRecord run;
    run.engine = "sim";
    run.config = "{}";
    const std::int64_t id = *db.BeginRun(run);
    state.ResumeTiming();
    if (!db.FinishRun(id, data, kRunOk).ok()) state.SkipWithError("FinishRun failed");
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FinishRunInsert)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();  // the rate is events per wall second

}  // namespace

BENCHMARK_MAIN();
