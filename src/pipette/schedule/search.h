// Schedule search: an order that minimises the makespan for given costs, latency and a per-rank
// activation limit, in the spirit of the Zero Bubble paper's automatic scheduler (Qi et al. 2023,
// §3: a heuristic that fills bubbles with W under a memory limit, then a bounded search).
//
// SearchSchedule() starts from every applicable built-in schedule (same p, v, m and placement,
// every microbatch through all stages, peak activations within the limit), evaluated with the same
// costs, and from a family of greedy list schedules: ranks run an event simulation with the given
// costs and latency and, whenever free, pick a ready I (or F, by policy), else a ready F whose
// chunk fits the rank's in-flight cap, else a pending W to fill the bubble. The policies vary the
// per-rank caps (warm-up depth), the F/I priority, the F order and when W runs. The best of all
// candidates is then improved by a bounded local search, first over the policy (per-rank caps,
// flags), then over the order itself (an action moved a few places on its rank), accepting a move
// whose makespan is not larger. Every candidate is checked by Lower() (which validates) and
// Evaluate(), so the result is an ordinary valid Schedule named "search" whose makespan is never
// above the best applicable built-in's. Pure and deterministic: the same options give the same
// result, except that a time limit may stop the local search early (a fixed iteration budget makes
// it reproducible). Thread-safe.
//
// Example:
//   SearchOptions o{.p = 4, .v = 1, .m = 8, .costs = Costs::Uniform(4, {1, 2, 1}),
//                   .memory_limit = 4};
//   Result<SearchResult> r = SearchSchedule(o);  // r->schedule: 38 -> 36 against zb-h1
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipette/common/status.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

enum class SearchPlacement { kLoop, kV };

// Parses "loop" or "v"; errors name `key`.
Result<SearchPlacement> ParseSearchPlacement(std::string_view text,
                                             std::string_view key = "--placement");
std::string_view SearchPlacementName(SearchPlacement placement);

struct SearchOptions {
  int p = 1;
  int v = 1;  // stages per rank; the V placement needs v = 2
  int m = 1;
  SearchPlacement placement = SearchPlacement::kLoop;
  Costs costs;               // one entry per stage (p*v), as Evaluate() takes them
  EvaluateOptions evaluate;  // latency (and whatever else Evaluate() honours)
  int memory_limit = 0;    // most chunks in flight per rank (Evaluation::peak_activations); 0: none
  std::uint64_t seed = 1;  // the local search's random moves
  int iterations = 2000;   // local-search moves evaluated (the reproducible budget)
  double time_limit_s = 0.0;  // wall-clock bound on the greedy phase and the local search; 0: none
};

struct SearchResult {
  Schedule schedule;         // named "search"
  Evaluation evaluation;     // with the options' costs and latency
  double lower_bound = 0.0;  // MakespanLowerBound() of the problem
  // The best applicable built-in within the limit; empty name (and makespan 0) when none applies.
  std::string best_builtin;
  double best_builtin_makespan = 0.0;
  std::string start;  // the candidate the local search started from
  double start_makespan = 0.0;
  int candidates = 0;      // built-ins and greedy policies evaluated before the local search
  int iterations_run = 0;  // local-search moves evaluated
  int improvements = 0;    // moves that lowered the makespan
};

// Returns the searched schedule. Errors (InvalidArgument, naming the option): p, v, m out of range
// (S*m above kMaxScheduleChunks or above kMaxSearchChunks), costs not one per stage, a V placement
// with v != 2, a memory limit below the chunks one microbatch holds on a rank (v), a negative
// budget, a link slowdown out of range; InvalidArgument naming --time-limit when it passed before
// any candidate was found. Uneven work comes in through the costs (ApplyUnevenWork:
// per-microbatch sequence lengths, rank speeds) and options.evaluate.link_slowdowns.
Result<SearchResult> SearchSchedule(const SearchOptions& options);

// The largest S*m the search accepts: each local-search move lowers and evaluates the whole
// schedule, so it is meant for the sizes one studies, not the generators' limit.
inline constexpr long long kMaxSearchChunks = 65'536;
// Without a time limit (--time-limit 0), the longest search the iteration budget may ask for,
// estimated at 8 us per chunk and iteration; a given --time-limit bounds the search itself.
inline constexpr double kMaxSearchSeconds = 600;

// Returns a lower bound on the makespan of any valid schedule of the problem: the largest, over
// ranks, of the earliest time the rank can start (its first stage's forward chain from stage 0,
// with latency per rank crossing) plus its busy time, and the longest single-microbatch chain
// (all forwards, all input backwards, the first stage's W, latency per crossing). A full backward
// is counted at min(I + W, its own cost). Costs per microbatch (uneven work) and link slowdowns
// count. REQUIRES: costs fit the shape (Costs::Check), link slowdowns name ranks in [0, p).
double MakespanLowerBound(const Schedule& shape, const Costs& costs,
                          const EvaluateOptions& options);

}  // namespace pipette
