#include "pipette/schedule/search.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/uneven_work.h"

namespace pipette {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// When W runs: right after its I (as a full backward would), only when nothing else is ready, or
// only when it ends before the rank's next known input arrives.
enum class WMode { kEager, kLazy, kFit };
// Which ready forward goes first: the highest stage, the lowest stage, or the oldest microbatch.
enum class FOrder { kDepthFirst, kBreadthFirst, kOldestFirst };

struct Policy {
  std::vector<int> cap;  // per rank: most chunks in flight
  bool backward_first = true;
  WMode w_mode = WMode::kLazy;
  FOrder f_order = FOrder::kOldestFirst;
  bool reserve = true;  // a microbatch entering a rank reserves all its chunks there
  std::string Describe() const {
    static constexpr const char* kW[] = {"eager", "lazy", "fit"};
    static constexpr const char* kF[] = {"depth", "breadth", "oldest"};
    std::string caps;
    for (int c : cap) caps += (caps.empty() ? "" : ",") + std::to_string(c);
    return fmt::format("greedy(cap={} {} W={} F={}{})", caps,
                       backward_first ? "I-first" : "F-first", kW[static_cast<int>(w_mode)],
                       kF[static_cast<int>(f_order)], reserve ? " reserve" : "");
  }
};

// The time from a SEND on rank a to its data on rank b, as Evaluate() takes it: the latency times
// the pair's slowdown factor, 0 within a rank.
class LinkLatency {
 public:
  explicit LinkLatency(const EvaluateOptions& options)
      : latency_(options.p2p_latency), factors_(options.link_slowdowns) {}
  double operator()(int a, int b) const { return a == b ? 0.0 : latency_ * factors_(a, b); }

 private:
  double latency_;
  LinkFactors factors_;
};

// The problem every candidate is built for and scored against.
struct Problem {
  const SearchOptions& o;
  Schedule shape;  // empty rank lists, placement and routes
  int num_stages = 0;
  std::vector<std::vector<int>> stages_of;  // per rank, ascending
  int limit = 0;                            // effective per-rank cap (no limit: all chunks)
  LinkLatency latency;

  double Latency(int from_rank, int to_rank) const { return latency(from_rank, to_rank); }
  int rank_of(int stage) const { return shape.placement.rank_of(stage); }
};

struct Scored {
  Schedule schedule;
  Evaluation evaluation;
  // The tie-break between equal makespans: the sum of every compute's end time, so that among
  // equally long orders the one that finishes its work earlier (W last, no needless waits) wins.
  double flow = 0.0;
  double makespan() const { return evaluation.makespan; }
};

bool Within(const Evaluation& e, int limit) {
  return std::all_of(e.peak_activations.begin(), e.peak_activations.end(),
                     [limit](int peak) { return peak <= limit; });
}

// Lowers (validating) and evaluates; nullopt when invalid or above the memory limit.
std::optional<Scored> Score(const Problem& problem, Schedule schedule) {
  Result<Program> program = Lower(schedule);
  if (!program.ok()) return std::nullopt;
  EvaluateOptions options = problem.o.evaluate;
  options.record_timeline = true;
  Result<Evaluation> e = Evaluate(*program, problem.o.costs, options);
  if (!e.ok() || !Within(*e, problem.limit)) return std::nullopt;
  double flow = 0.0;
  for (const RankProgram& rank : program->ranks) {
    for (std::size_t k = 0; k < rank.instructions.size(); ++k) {
      if (IsCompute(rank.instructions[k].action.kind)) flow += e->timeline[rank.rank][k].end;
    }
  }
  e->timeline.clear();
  e->timeline.shrink_to_fit();
  return Scored{std::move(schedule), std::move(e).value(), flow};
}

bool Better(double candidate, double incumbent) {
  return candidate < incumbent - 1e-9 * std::max(1.0, std::abs(incumbent));
}
// A local-search move is kept when its makespan is lower, or equal with no larger flow.
bool Keep(const Scored& candidate, const Scored& incumbent) {
  if (Better(candidate.makespan(), incumbent.makespan())) return true;
  return !Better(incumbent.makespan(), candidate.makespan()) &&
         !Better(incumbent.flow, candidate.flow);
}

// The local search's budget: moves, and the wall clock (which also bounds the greedy phase).
struct Budget {
  int iterations = 0;
  double time_limit_s = 0.0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int used = 0;
  bool Spent() const { return used >= iterations || TimeUp(); }
  bool TimeUp() const {
    if (time_limit_s <= 0.0) return false;
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return elapsed.count() >= time_limit_s;
  }
};

// ---------------------------------------------------------------------------------------------
// The greedy list scheduler: an event simulation of all ranks under one policy.

struct GreedyState {
  const Problem& pb;
  const Policy& policy;
  int m = 0;
  std::vector<double> f_end, i_end;  // per (stage, microbatch): end time, -1 while not run
  std::vector<int> next_f, next_i;   // per stage: the next microbatch to run F / I on
  std::vector<double> free_at;       // per rank
  std::vector<int> in_flight, reserved, left;
  std::vector<std::vector<int>> entered;     // per rank, per microbatch: chunks F'd there
  std::vector<std::vector<Action>> w_queue;  // per rank: pending W, oldest first
  std::vector<std::size_t> w_head;
  Schedule out;

  GreedyState(const Problem& problem, const Policy& pol)
      : pb(problem), policy(pol), m(problem.o.m), out(problem.shape) {
    const int s = pb.num_stages, p = pb.o.p;
    f_end.assign(static_cast<std::size_t>(s) * m, -1.0);
    i_end.assign(static_cast<std::size_t>(s) * m, -1.0);
    next_f.assign(s, 0);
    next_i.assign(s, 0);
    free_at.assign(p, 0.0);
    in_flight.assign(p, 0);
    reserved.assign(p, 0);
    left.assign(p, 0);
    entered.assign(p, std::vector<int>(m, 0));
    w_queue.assign(p, {});
    w_head.assign(p, 0);
    for (int r = 0; r < p; ++r) left[r] = 3 * m * static_cast<int>(pb.stages_of[r].size());
  }
  std::size_t Index(int stage, int mb) const { return static_cast<std::size_t>(stage) * m + mb; }
  int Chunks(int r) const { return static_cast<int>(pb.stages_of[r].size()); }

  // When the input of F/I (stage, mb) is there; kInf while its producer has not run.
  double ForwardReady(int stage, int mb) const {
    if (stage == 0) return 0.0;
    const double end = f_end[Index(stage - 1, mb)];
    return end < 0 ? kInf : end + pb.Latency(pb.rank_of(stage - 1), pb.rank_of(stage));
  }
  double BackwardReady(int stage, int mb) const {
    if (stage == pb.num_stages - 1) return f_end[Index(stage, mb)];
    const double end = i_end[Index(stage + 1, mb)];
    return end < 0 ? kInf : end + pb.Latency(pb.rank_of(stage + 1), pb.rank_of(stage));
  }
  bool FitsMemory(int r, int mb) const {
    if (!policy.reserve) return in_flight[r] + 1 <= policy.cap[r];
    return entered[r][mb] > 0 || reserved[r] + Chunks(r) <= policy.cap[r];
  }
  bool PendingW(int r) const { return w_head[r] < w_queue[r].size(); }

  // The F and I rank r could run next, by policy, with the time their inputs are there.
  struct Choice {
    std::optional<Action> f, i;
    double f_ready = kInf, i_ready = kInf;
  };
  Choice Candidates(int r) const {
    Choice c;
    for (int stage : pb.stages_of[r]) {
      const int fm = next_f[stage];
      if (fm < m && FitsMemory(r, fm)) {
        const double ready = ForwardReady(stage, fm);
        if (!c.f || PreferF(stage, fm, ready, *c.f, c.f_ready)) {
          c.f = Action::F(stage, fm);
          c.f_ready = ready;
        }
      }
      const int im = next_i[stage];
      if (im < next_f[stage]) {
        const double ready = BackwardReady(stage, im);
        if (ready < c.i_ready || (ready == c.i_ready && c.i && im < c.i->microbatch)) {
          c.i = Action::I(stage, im);
          c.i_ready = ready;
        }
      }
    }
    return c;
  }
  bool PreferF(int stage, int mb, double ready, const Action& best, double best_ready) const {
    const double now = free_at[pb.rank_of(stage)];
    const bool here = ready <= now, best_here = best_ready <= now;
    if (here != best_here) return here;
    if (!here) return ready < best_ready;
    switch (policy.f_order) {
      case FOrder::kDepthFirst:
        return stage > best.stage;
      case FOrder::kBreadthFirst:
        return stage < best.stage;
      case FOrder::kOldestFirst:
        return mb < best.microbatch || (mb == best.microbatch && stage > best.stage);
    }
    return false;
  }

  // What rank r does next and when; nullopt when it must wait for another rank.
  struct Step {
    Action action;
    double start = 0.0;
  };
  std::optional<Step> Next(int r) const {
    const Choice c = Candidates(r);
    const double now = free_at[r];
    const bool f_now = c.f && c.f_ready <= now, i_now = c.i && c.i_ready <= now;
    if (i_now && (policy.backward_first || !f_now)) return Step{*c.i, now};
    if (f_now) return Step{*c.f, now};
    const double next_input = std::min(c.f_ready, c.i_ready);
    if (PendingW(r)) {
      const Action& w = w_queue[r][w_head[r]];
      const bool fits = now + pb.o.costs.Of(w) <= next_input;
      if (policy.w_mode != WMode::kFit || fits || (!c.f && !c.i)) return Step{w, now};
    }
    if (next_input == kInf) return std::nullopt;
    return Step{c.i_ready <= c.f_ready ? *c.i : *c.f, next_input};
  }

  void Run(int r, const Step& step) {
    const Action& a = step.action;
    const double end = step.start + pb.o.costs.Of(a);
    free_at[r] = end;
    --left[r];
    out.ranks[r].push_back(a);
    if (a.kind == ActionKind::kForward) {
      f_end[Index(a.stage, a.microbatch)] = end;
      ++next_f[a.stage];
      ++in_flight[r];
      if (entered[r][a.microbatch]++ == 0) reserved[r] += Chunks(r);
    } else if (a.kind == ActionKind::kInputBackward) {
      i_end[Index(a.stage, a.microbatch)] = end;
      ++next_i[a.stage];
      --in_flight[r];
      --reserved[r];
      w_queue[r].push_back(Action::W(a.stage, a.microbatch));
      if (policy.w_mode == WMode::kEager) Run(r, Step{w_queue[r][w_head[r]], end});
    } else {
      ++w_head[r];
    }
  }
};

// Returns the greedy schedule of `policy`, or nullopt when its caps deadlock the ranks or the
// time limit passes.
std::optional<Schedule> Greedy(const Problem& pb, const Policy& policy, const Budget& budget) {
  GreedyState st(pb, policy);
  const int p = pb.o.p;
  for (long long steps = 1;; ++steps) {
    if (steps % 4096 == 0 && budget.TimeUp()) return std::nullopt;
    int best_rank = -1;
    double best_start = kInf;
    std::optional<GreedyState::Step> best;
    bool any_left = false;
    for (int r = 0; r < p; ++r) {
      if (st.left[r] == 0) continue;
      any_left = true;
      std::optional<GreedyState::Step> step = st.Next(r);
      if (step && step->start < best_start) {
        best_start = step->start;
        best_rank = r;
        best = step;
      }
    }
    if (!any_left) break;
    if (best_rank < 0) return std::nullopt;
    st.Run(best_rank, *best);
  }
  st.out.name = "search";
  return std::move(st.out);
}

// ---------------------------------------------------------------------------------------------
// Candidates.

// The per-rank caps a*(p - r) + b (at least the chunks one microbatch holds, at most the limit),
// for the shapes of the published schedules: 1F1B (1, 0), ZB-H2 (2, -1), interleaved (2, p - 1),
// ZB-V (0, 2p), and the limit everywhere.
std::vector<std::vector<int>> CapFamilies(const Problem& pb) {
  const int p = pb.o.p;
  std::vector<std::vector<int>> out;
  const std::pair<int, int> shapes[] = {{0, pb.limit}, {1, 0},         {2, -1},        {1, p},
                                        {2, p - 1},    {0, 2 * p},     {2, 2 * p - 1}, {3, 0},
                                        {0, p},        {1, 2 * p - 1}, {4, -1},        {3, p}};
  for (const auto& [a, b] : shapes) {
    std::vector<int> cap(p);
    for (int r = 0; r < p; ++r) {
      const int chunks = static_cast<int>(pb.stages_of[r].size());
      const long long raw = static_cast<long long>(a) * (p - r) + b;
      cap[r] = static_cast<int>(std::clamp<long long>(raw, chunks, pb.limit));
    }
    if (std::find(out.begin(), out.end(), cap) == out.end()) out.push_back(std::move(cap));
  }
  return out;
}

std::vector<Policy> InitialPolicies(const Problem& pb) {
  std::vector<Policy> out;
  for (const std::vector<int>& cap : CapFamilies(pb)) {
    for (bool backward_first : {true, false}) {
      for (WMode w : {WMode::kLazy, WMode::kFit, WMode::kEager}) {
        for (FOrder f : {FOrder::kOldestFirst, FOrder::kDepthFirst, FOrder::kBreadthFirst}) {
          for (bool reserve : {true, false}) {
            out.push_back(Policy{cap, backward_first, w, f, reserve});
            if (pb.o.v == 1) break;  // one stage per rank: one F candidate, nothing to reserve
          }
          if (pb.o.v == 1) break;
        }
      }
    }
  }
  return out;
}

// The built-in schedules with the problem's shape, within the limit.
std::optional<std::pair<std::string, Scored>> BestBuiltin(const Problem& pb, int& evaluated) {
  std::optional<std::pair<std::string, Scored>> best;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    Result<Schedule> s = MakeSchedule(g->name(), ScheduleParams{pb.o.p, pb.o.v, pb.o.m, 0});
    if (!s.ok() || s->placement != pb.shape.placement || s->routes != pb.shape.routes) continue;
    ++evaluated;
    std::optional<Scored> scored = Score(pb, std::move(s).value());
    if (!scored) continue;
    if (!best || Better(scored->makespan(), best->second.makespan())) {
      best.emplace(std::string(g->name()), std::move(*scored));
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Local search.

// A small deterministic generator (SplitMix64): the same seed gives the same moves everywhere.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<std::uint64_t>(n)); }

 private:
  std::uint64_t state_;
};

struct GreedyBest {
  Policy policy;
  Scored scored;
};

// The best schedule of the initial policies, in their fixed order (a time limit may cut it short).
std::optional<GreedyBest> BestGreedy(const Problem& pb, const Budget& budget, int& evaluated) {
  std::optional<GreedyBest> best;
  for (const Policy& policy : InitialPolicies(pb)) {
    if (best && budget.TimeUp()) break;
    ++evaluated;
    std::optional<Schedule> s = Greedy(pb, policy, budget);
    std::optional<Scored> scored = s ? Score(pb, std::move(*s)) : std::nullopt;
    if (scored && (!best || Keep(*scored, best->scored))) {
      best = GreedyBest{policy, std::move(*scored)};
    }
  }
  return best;
}

Policy Mutate(const Problem& pb, Policy policy, Random& rng) {
  const int p = pb.o.p;
  switch (rng.Below(6)) {
    case 0:
      policy.backward_first = !policy.backward_first;
      break;
    case 1:
      policy.w_mode = static_cast<WMode>(rng.Below(3));
      break;
    case 2:
      policy.f_order = static_cast<FOrder>(rng.Below(3));
      break;
    case 3:
      policy.reserve = !policy.reserve;
      break;
    default: {  // one rank's cap, or a suffix of ranks, one step up or down
      const int r = rng.Below(p), delta = rng.Below(2) == 0 ? -1 : 1;
      const int last = rng.Below(2) == 0 ? r : p - 1;
      for (int k = r; k <= last; ++k) {
        const int chunks = static_cast<int>(pb.stages_of[k].size());
        policy.cap[k] = std::clamp(policy.cap[k] + delta, chunks, pb.limit);
      }
    }
  }
  return policy;
}

// Moves one action of one rank a few places, keeping each (stage, microbatch)'s F, I, W order on
// the rank; returns false when the move breaks it.
bool MoveAction(std::vector<Action>& actions, Random& rng) {
  const int n = static_cast<int>(actions.size());
  if (n < 2) return false;
  const int from = rng.Below(n);
  const int to = std::clamp(from + rng.Below(17) - 8, 0, n - 1);
  if (from == to) return false;
  const Action a = actions[from];
  const int step = to > from ? 1 : -1;
  for (int k = from + step; k != to + step; k += step) {
    const Action& b = actions[k];
    const bool same_chunk = b.stage == a.stage && b.microbatch == a.microbatch;
    if (same_chunk || a.kind == ActionKind::kOverlapped || b.kind == ActionKind::kOverlapped) {
      return false;
    }
  }
  if (step > 0) {
    std::rotate(actions.begin() + from, actions.begin() + from + 1, actions.begin() + to + 1);
  } else {
    std::rotate(actions.begin() + to, actions.begin() + from, actions.begin() + from + 1);
  }
  return true;
}

struct Incumbent {
  Scored best;
  std::string start;
  int improvements = 0;
};

// Walks the greedy policies from the best initial one: a mutation is kept when its makespan is
// not above the walk's current one; the incumbent takes every schedule not worse than itself.
void PolicySearch(const Problem& pb, Policy current, const Scored& start, Incumbent& inc,
                  Budget& budget, Random& rng) {
  Scored current_best{{}, {}, start.flow};  // the walk's makespan and flow (no schedule kept)
  current_best.evaluation.makespan = start.makespan();
  const int share = budget.iterations / 2;
  while (budget.used < share && !budget.Spent()) {
    ++budget.used;
    Policy next = Mutate(pb, current, rng);
    std::optional<Schedule> s = Greedy(pb, next, budget);
    if (!s) continue;
    std::optional<Scored> scored = Score(pb, std::move(*s));
    if (!scored || Better(current_best.makespan(), scored->makespan())) continue;
    current = std::move(next);
    current_best.evaluation.makespan = scored->makespan();
    current_best.flow = scored->flow;
    if (!Keep(*scored, inc.best)) continue;
    if (Better(scored->makespan(), inc.best.makespan())) ++inc.improvements;
    inc.best = std::move(*scored);
  }
}

// A random walk over the order from the incumbent: a move is taken when its makespan is not larger
// (equal makespans let the walk cross plateaus); the incumbent keeps the best visited order
// (Keep: makespan, then flow).
void OrderSearch(const Problem& pb, Incumbent& inc, Budget& budget, Random& rng) {
  Scored current = inc.best;
  while (!budget.Spent()) {
    ++budget.used;
    Schedule next = current.schedule;
    if (!MoveAction(next.ranks[rng.Below(pb.o.p)], rng)) continue;
    std::optional<Scored> scored = Score(pb, std::move(next));
    if (!scored || Better(current.makespan(), scored->makespan())) continue;
    if (Keep(*scored, inc.best)) {
      if (Better(scored->makespan(), inc.best.makespan())) ++inc.improvements;
      inc.best = *scored;
    }
    current = std::move(*scored);
  }
}

Status CheckOptions(const SearchOptions& o) {
  auto bad = [](std::string_view key, auto value, std::string_view rule) {
    return Status::InvalidArgument(fmt::format("{} = {}: {}", key, value, rule));
  };
  if (o.p < 1 || o.p > kMaxPipelineRanks) return bad("-p", o.p, "must be in [1, 16384]");
  if (o.m < 1) return bad("-m", o.m, "must be at least 1");
  if (o.v < 1) return bad("-v", o.v, "must be at least 1");
  if (o.placement == SearchPlacement::kV && o.v != 2) {
    return bad("-v", o.v, "the V placement holds exactly 2 stages per rank (v = 2)");
  }
  const long long chunks = static_cast<long long>(o.p) * o.v * o.m;
  if (chunks > kMaxSearchChunks) {
    return bad("p*v*m", chunks, fmt::format("the search accepts at most {}", kMaxSearchChunks));
  }
  if (static_cast<long long>(o.costs.stages.size()) != static_cast<long long>(o.p) * o.v) {
    return bad("stage costs", o.costs.stages.size(),
               fmt::format("need one per stage ({})", o.p * o.v));
  }
  PIPETTE_RETURN_IF_ERROR(o.costs.Check(o.p * o.v, o.m));
  PIPETTE_RETURN_IF_ERROR(CheckLinkSlowdowns(o.evaluate.link_slowdowns, o.p, "--link-slowdown"));
  if (o.memory_limit < 0) return bad("--memory-limit", o.memory_limit, "must be at least 0");
  if (o.memory_limit > 0 && o.memory_limit < o.v) {
    return bad("--memory-limit", o.memory_limit,
               fmt::format("a microbatch holds {} chunks on every rank until its first backward "
                           "there, so the limit must be at least v = {}",
                           o.v, o.v));
  }
  if (o.iterations < 0) return bad("--iterations", o.iterations, "must be at least 0");
  if (!(o.time_limit_s >= 0.0)) return bad("--time-limit", o.time_limit_s, "must be at least 0");
  // Without a time limit only the iterations bound the search: each evaluates the whole schedule,
  // about 8 us per chunk at most (measured, 40 iterations, -p 16/32/64 with m = 16p: 3.3, 5.1 and
  // 7.0 us per chunk and iteration; p 64 m 1024 with 2000 iterations ran 297 s, stopping early).
  if (o.time_limit_s == 0.0) {
    const double seconds = 8e-6 * static_cast<double>(chunks) * o.iterations;
    if (seconds > kMaxSearchSeconds) {
      return Status::InvalidArgument(fmt::format(
          "--time-limit 0 --iterations {}: the search of {} chunks could take up to about {:.0f} "
          "s (8 us per chunk and iteration), more than the limit of {:.0f} s: give a "
          "--time-limit or fewer --iterations",
          o.iterations, chunks, seconds, kMaxSearchSeconds));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SearchPlacement> ParseSearchPlacement(std::string_view text, std::string_view key) {
  if (text == "loop") return SearchPlacement::kLoop;
  if (text == "v") return SearchPlacement::kV;
  return Status::InvalidArgument(
      fmt::format("{} = '{}': must be loop (stage c*p + r on rank r) or v (rank r holds stages r "
                  "and 2p-1-r)",
                  key, text));
}

std::string_view SearchPlacementName(SearchPlacement placement) {
  return placement == SearchPlacement::kV ? "v" : "loop";
}

Result<SearchResult> SearchSchedule(const SearchOptions& o) {
  PIPETTE_RETURN_IF_ERROR(CheckOptions(o));
  Placement placement =
      o.placement == SearchPlacement::kV ? Placement::VShape(o.p) : Placement::Loop(o.p, o.v);
  Problem pb{o,         MakeEmptySchedule("search", o.p, o.v, o.m, std::move(placement)),
             o.p * o.v, {},
             0,         LinkLatency(o.evaluate)};
  for (int r = 0; r < o.p; ++r) pb.stages_of.push_back(pb.shape.placement.StagesOf(r));
  pb.limit = o.memory_limit > 0 ? o.memory_limit : o.v * o.m;

  SearchResult result;
  result.lower_bound = MakespanLowerBound(pb.shape, o.costs, o.evaluate);
  Budget budget{o.iterations, o.time_limit_s};
  std::optional<Incumbent> inc;
  if (auto builtin = BestBuiltin(pb, result.candidates)) {
    result.best_builtin = builtin->first;
    result.best_builtin_makespan = builtin->second.makespan();
    inc = Incumbent{std::move(builtin->second), builtin->first};
  }
  std::optional<GreedyBest> greedy = BestGreedy(pb, budget, result.candidates);
  if (greedy && (!inc || Keep(greedy->scored, inc->best))) {
    inc = Incumbent{greedy->scored, greedy->policy.Describe()};
  }
  if (!inc) {
    if (budget.TimeUp()) {
      return Status::InvalidArgument(
          fmt::format("--time-limit = {}: no schedule of p={} v={} m={} was found in time",
                      o.time_limit_s, o.p, o.v, o.m));
    }
    return Status::InvalidArgument(
        fmt::format("--memory-limit = {}: no schedule of p={} v={} m={} was found within it",
                    o.memory_limit, o.p, o.v, o.m));
  }
  result.start = inc->start;
  result.start_makespan = inc->best.makespan();
  Random rng(o.seed);
  if (greedy) {
    PolicySearch(pb, greedy->policy, greedy->scored, *inc, budget, rng);
  }
  OrderSearch(pb, *inc, budget, rng);
  result.iterations_run = budget.used;
  result.improvements = inc->improvements;
  result.schedule = std::move(inc->best.schedule);
  result.schedule.name = "search";
  result.evaluation = std::move(inc->best.evaluation);
  return result;
}

double MakespanLowerBound(const Schedule& shape, const Costs& costs,
                          const EvaluateOptions& options) {
  const int p = shape.p;
  const Placement& pl = shape.placement;
  auto cost = [&](ActionKind kind, int stage, int mb) {
    return costs.Of(Action::Make(kind, stage, mb));
  };
  auto backward = [&](int stage, int mb) {  // the cheaper of I + W and a full B
    return std::min(
        cost(ActionKind::kInputBackward, stage, mb) + cost(ActionKind::kWeightBackward, stage, mb),
        cost(ActionKind::kFullBackward, stage, mb));
  };
  const LinkLatency latency(options);
  auto hop = [&](int a, int b) { return latency(pl.rank_of(a), pl.rank_of(b)); };
  std::vector<double> busy(p, 0.0), head(p, kInf);
  double chain_bound = 0.0;
  for (int mb = 0; mb < shape.m; ++mb) {
    const StageRange& route = shape.routes[mb];
    double t = 0.0;  // the earliest end of F(stage, mb)
    for (int stage = route.first; stage <= route.last; ++stage) {
      if (stage > route.first) t += hop(stage - 1, stage);
      head[pl.rank_of(stage)] = std::min(head[pl.rank_of(stage)], t);
      t += cost(ActionKind::kForward, stage, mb);
      busy[pl.rank_of(stage)] += cost(ActionKind::kForward, stage, mb) + backward(stage, mb);
    }
    for (int stage = route.last; stage >= route.first; --stage) {
      if (stage < route.last) t += hop(stage + 1, stage);
      t += std::min(cost(ActionKind::kInputBackward, stage, mb),
                    cost(ActionKind::kFullBackward, stage, mb));
    }
    t += std::max(0.0, backward(route.first, mb) -
                           std::min(cost(ActionKind::kInputBackward, route.first, mb),
                                    cost(ActionKind::kFullBackward, route.first, mb)));
    chain_bound = std::max(chain_bound, t);
  }
  double bound = chain_bound;
  for (int r = 0; r < p; ++r) {
    if (head[r] < kInf) bound = std::max(bound, head[r] + busy[r]);
  }
  return bound;
}

}  // namespace pipette
