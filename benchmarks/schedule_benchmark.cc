// Throughput of the schedule layer: generate, lower and evaluate a large schedule.
//
// The target: p = 64, v = 4, m = 1024 (262,144 chunks, 524,288 compute actions) generated,
// lowered and evaluated at >= 5 million evaluated actions per second on one core. Counters:
//   actions/s       compute actions (F, I, W, B, overlapped cells) per second of the whole pipeline
//   instructions/s  lowered instructions (compute + SEND/RECV) per second
// BM_SumOfCosts is the floor for comparison in the same run: one pass that only adds up the costs
// of the same actions, with no dependency tracking.
// BM_Search times SearchSchedule() (pipette/schedule/search.h) at the sizes one studies, with the
// CLI's default budget of 2000 local-search moves and F=1, I=2, W=1, latency 0.25, no memory
// limit; counters: its makespan, the best built-in's, candidates and moves per second.
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/search.h"

namespace {

using namespace pipette;

Schedule Make(const std::string& name, int p, int v, int m) {
  Result<Schedule> s = MakeSchedule(name, ScheduleParams{p, v, m, 0});
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.status().message().c_str());
    std::abort();
  }
  return std::move(s).value();
}

void SetCounters(benchmark::State& state, std::size_t actions, std::size_t instructions) {
  state.counters["actions/s"] = benchmark::Counter(
      static_cast<double>(actions) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["instructions/s"] = benchmark::Counter(
      static_cast<double>(instructions) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["actions"] = static_cast<double>(actions);
}

// Generate + validate + lower + evaluate, as `pipette schedule` does.
void BM_Pipeline(benchmark::State& state, const std::string& name, int p, int v, int m) {
  std::size_t actions = 0, instructions = 0;
  for (auto _ : state) {
    Schedule s = Make(name, p, v, m);
    Program program = *Lower(s);
    Evaluation e = *Evaluate(program, Costs::Uniform(s.num_stages(), StageCost{1, 2, 1}));
    benchmark::DoNotOptimize(e.makespan);
    actions = s.num_actions();
    instructions = program.num_instructions();
  }
  SetCounters(state, actions, instructions);
}

void BM_Generate(benchmark::State& state, const std::string& name, int p, int v, int m) {
  std::size_t actions = 0;
  for (auto _ : state) {
    Schedule s = Make(name, p, v, m);
    actions = s.num_actions();
    benchmark::DoNotOptimize(s.ranks.data());
  }
  SetCounters(state, actions, 0);
}

void BM_Lower(benchmark::State& state, const std::string& name, int p, int v, int m) {
  Schedule s = Make(name, p, v, m);
  std::size_t instructions = 0;
  for (auto _ : state) {
    Program program = *Lower(s);
    instructions = program.num_instructions();
    benchmark::DoNotOptimize(program.ranks.data());
  }
  SetCounters(state, s.num_actions(), instructions);
}

void BM_Evaluate(benchmark::State& state, const std::string& name, int p, int v, int m) {
  Schedule s = Make(name, p, v, m);
  Program program = *Lower(s);
  const Costs costs = Costs::Uniform(s.num_stages(), StageCost{1, 2, 1});
  for (auto _ : state) {
    Evaluation e = *Evaluate(program, costs);
    benchmark::DoNotOptimize(e.makespan);
  }
  SetCounters(state, s.num_actions(), program.num_instructions());
}

void BM_SumOfCosts(benchmark::State& state, const std::string& name, int p, int v, int m) {
  Schedule s = Make(name, p, v, m);
  const Costs costs = Costs::Uniform(s.num_stages(), StageCost{1, 2, 1});
  for (auto _ : state) {
    double total = 0;
    for (const auto& actions : s.ranks) {
      for (const Action& a : actions) total += costs.Of(a);
    }
    benchmark::DoNotOptimize(total);
  }
  SetCounters(state, s.num_actions(), 0);
}

void BM_Search(benchmark::State& state, SearchPlacement placement, int p, int v, int m) {
  SearchOptions o;
  o.p = p;
  o.v = v;
  o.m = m;
  o.placement = placement;
  o.costs = Costs::Uniform(p * v, StageCost{1, 2, 1});
  o.evaluate.p2p_latency = 0.25;
  o.iterations = 2000;
  SearchResult r;
  for (auto _ : state) {
    Result<SearchResult> result = SearchSchedule(o);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    r = std::move(result).value();
    benchmark::DoNotOptimize(r.schedule.ranks.data());
  }
  state.counters["makespan"] = r.evaluation.makespan;
  state.counters["builtin"] = r.best_builtin_makespan;
  state.counters["bound"] = r.lower_bound;
  state.counters["candidates"] = r.candidates;
  state.counters["moves/s"] = benchmark::Counter(
      static_cast<double>(r.iterations_run) * state.iterations(), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  struct Case {
    const char* schedule;
    int p, v, m;
    bool phases;  // also time generate, lower and evaluate separately, and the cost-sum floor
  };
  const Case cases[] = {
      {"interleaved-1f1b", 64, 4, 1024, true},  // the target case
      {"interleaved-zb", 64, 4, 1024, false},
      {"dualpipe-v", 64, 2, 1024, false},
      {"1f1b", 64, 1, 1024, false},
  };
  using Function = void (*)(benchmark::State&, const std::string&, int, int, int);
  const std::pair<const char*, Function> phases[] = {{"BM_Generate", BM_Generate},
                                                     {"BM_Lower", BM_Lower},
                                                     {"BM_Evaluate", BM_Evaluate},
                                                     {"BM_SumOfCosts", BM_SumOfCosts}};
  for (const Case& c : cases) {
    const std::string suffix = fmt::format("/{}_p{}_v{}_m{}", c.schedule, c.p, c.v, c.m);
    benchmark::RegisterBenchmark(("BM_Pipeline" + suffix).c_str(), BM_Pipeline, c.schedule, c.p,
                                 c.v, c.m)
        ->Unit(benchmark::kMillisecond);
    if (!c.phases) continue;
    for (const auto& [name, function] : phases) {
      benchmark::RegisterBenchmark((name + suffix).c_str(), function, c.schedule, c.p, c.v, c.m)
          ->Unit(benchmark::kMillisecond);
    }
  }
  struct SearchCase {
    SearchPlacement placement;
    int p, v, m;
  };
  const SearchCase searches[] = {{SearchPlacement::kLoop, 4, 1, 8},
                                 {SearchPlacement::kV, 4, 2, 8},
                                 {SearchPlacement::kLoop, 8, 2, 32},
                                 {SearchPlacement::kV, 8, 2, 32},
                                 {SearchPlacement::kLoop, 16, 1, 64}};
  for (const SearchCase& c : searches) {
    const std::string name =
        fmt::format("BM_Search/{}_p{}_v{}_m{}", SearchPlacementName(c.placement), c.p, c.v, c.m);
    benchmark::RegisterBenchmark(name.c_str(), BM_Search, c.placement, c.p, c.v, c.m)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
