// SearchSchedule(): valid, within the memory limit, never worse than the best applicable built-in
// (found here independently of the search), strictly better on uneven costs, and bounded below by
// MakespanLowerBound(), whose values are computed by hand in the comments.
#include "pipette/schedule/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/schedule/uneven_work.h"
#include "pipette/schedule/validate.h"

namespace pipette {
namespace {

SearchOptions Options(int p, int v, int m, SearchPlacement placement, StageCost cost,
                      double latency = 0.0, int limit = 0) {
  SearchOptions o;
  o.p = p;
  o.v = v;
  o.m = m;
  o.placement = placement;
  o.costs = Costs::Uniform(p * v, cost);
  o.evaluate.p2p_latency = latency;
  o.memory_limit = limit;
  o.iterations = 200;
  return o;
}

// Stage 0 (embedding) half as heavy, the last stage (head and loss) twice as heavy.
Costs Heterogeneous(int stages, StageCost cost) {
  Costs costs = Costs::Uniform(stages, cost);
  costs.stages.front() = {cost.f / 2, cost.i / 2, cost.w / 2};
  costs.stages.back() = {cost.f * 2, cost.i * 2, cost.w * 2};
  return costs;
}

Evaluation MustEvaluate(const Schedule& s, const SearchOptions& o) {
  Result<Program> program = Lower(s);
  EXPECT_TRUE(program.ok()) << program.status().message();
  if (!program.ok()) return {};
  Result<Evaluation> e = Evaluate(*program, o.costs, o.evaluate);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? *e : Evaluation{};
}

int Peak(const Evaluation& e) {
  return *std::max_element(e.peak_activations.begin(), e.peak_activations.end());
}

// The reference: every built-in with the problem's placement and full routes, within the limit.
// `applicable` counts them all, within the limit or not.
std::optional<double> BestBuiltin(const SearchOptions& o, int* applicable = nullptr) {
  const Placement placement =
      o.placement == SearchPlacement::kV ? Placement::VShape(o.p) : Placement::Loop(o.p, o.v);
  std::optional<double> best;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    Result<Schedule> s = MakeSchedule(g->name(), ScheduleParams{o.p, o.v, o.m, 0});
    if (!s.ok() || s->placement != placement) continue;
    const bool full = std::all_of(s->routes.begin(), s->routes.end(), [&](const StageRange& r) {
      return r.first == 0 && r.last == s->num_stages() - 1;
    });
    if (!full) continue;
    if (applicable != nullptr) ++*applicable;
    const Evaluation e = MustEvaluate(*s, o);
    if (o.memory_limit > 0 && Peak(e) > o.memory_limit) continue;
    if (!best || e.makespan < *best) best = e.makespan;
  }
  return best;
}

SearchResult MustSearch(const SearchOptions& o) {
  Result<SearchResult> r = SearchSchedule(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : SearchResult{};
}

// Checks everything a searched schedule promises; returns its makespan.
double CheckSearched(const SearchOptions& o, const SearchResult& r) {
  EXPECT_EQ(r.schedule.name, "search");
  EXPECT_TRUE(Validate(r.schedule).ok()) << Validate(r.schedule).message();
  const Evaluation e = MustEvaluate(r.schedule, o);
  EXPECT_DOUBLE_EQ(e.makespan, r.evaluation.makespan);
  if (o.memory_limit > 0) {
    EXPECT_LE(Peak(e), o.memory_limit);
  }
  const std::optional<double> builtin = BestBuiltin(o);
  if (builtin) {
    EXPECT_LE(e.makespan, *builtin + 1e-9);
    EXPECT_DOUBLE_EQ(r.best_builtin_makespan, *builtin);
  } else {
    EXPECT_EQ(r.best_builtin, "");
  }
  // The bound holds, and is at least every rank's busy time.
  EXPECT_GE(e.makespan, r.lower_bound - 1e-9);
  for (double busy : e.busy) EXPECT_GE(r.lower_bound, busy - 1e-9);
  return e.makespan;
}

TEST(ScheduleSearch, NeverWorseThanTheBuiltinsOnAGrid) {
  struct Shape {
    int v;
    SearchPlacement placement;
  };
  const Shape shapes[] = {
      {1, SearchPlacement::kLoop}, {2, SearchPlacement::kLoop}, {2, SearchPlacement::kV}};
  const StageCost cost_sets[] = {{1, 1, 1}, {1, 2, 1}, {2, 1, 1}, {1, 1, 2}};
  int searched = 0;
  for (int p : {2, 3, 4}) {
    for (const Shape& shape : shapes) {
      for (int m : {p, 2 * p}) {
        for (const StageCost& cost : cost_sets) {
          for (bool heterogeneous : {false, true}) {
            for (double latency : {0.0, 0.5}) {
              for (int limit : {0, p * shape.v}) {
                SearchOptions o = Options(p, shape.v, m, shape.placement, cost, latency, limit);
                o.iterations = 40;
                if (heterogeneous) o.costs = Heterogeneous(p * shape.v, cost);
                SCOPED_TRACE(::testing::Message()
                             << "p=" << p << " v=" << shape.v << " m=" << m << " placement="
                             << SearchPlacementName(shape.placement) << " F=" << cost.f
                             << " I=" << cost.i << " W=" << cost.w << " hetero=" << heterogeneous
                             << " latency=" << latency << " limit=" << limit);
                CheckSearched(o, MustSearch(o));
                ++searched;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(searched, 3 * 3 * 2 * 4 * 2 * 2 * 2);
}

// Where the built-ins leave a bubble the search fills it. Each expected value is the lower bound
// (so optimal) or a hand-checked order; the built-in value is the published schedule's.
TEST(ScheduleSearch, StrictlyBetterOnUnevenCosts) {
  struct Case {
    const char* what;
    SearchOptions o;
    double builtin;   // the published schedule's makespan (zbv or zb-h1, the best of today's)
    double searched;  // 0: only "strictly below the built-in, at least the bound"
  };
  std::vector<Case> cases;
  // V placement, F = 2, I = W = 1, ZB-V's memory (2p = 8): zbv takes 72. The bound: rank 3 starts
  // after 3 forwards (6) and is busy 2*8*(2+1+1) = 64, so 70; the search reaches it.
  cases.push_back({"V, F > I", Options(4, 2, 8, SearchPlacement::kV, {2, 1, 1}, 0, 8), 72, 70});
  // V placement, second costs, latency 0.5, no limit: zbv 78. Bound: rank 3 starts at 3*1 + 3*0.5
  // = 4.5 and is busy 2*8*4 = 64: 68.5, reached.
  cases.push_back(
      {"V, latency", Options(4, 2, 8, SearchPlacement::kV, {1, 2, 1}, 0.5, 0), 78, 68.5});
  // V placement, second costs, limit 12 (between ZB-V's 8 and unlimited): zbv 70; the bound
  // 3 + 64 = 67 is reached.
  cases.push_back(
      {"V, I > W, limit 12", Options(4, 2, 8, SearchPlacement::kV, {1, 2, 1}, 0, 12), 70, 67});
  // Loop v = 1, latency 0.5, 1F1B's memory (p = 4): zb-h1 takes 33 (its 27 plus 2(p-1) latencies).
  cases.push_back(
      {"loop, latency", Options(4, 1, 8, SearchPlacement::kLoop, {1, 1, 1}, 0.5, 4), 33, 30});
  // Loop v = 1, second costs, limit 6: zb-h1 (peak 4) takes 38, zb-h2 (peak 7) is out. Rank 0
  // runs 6 forwards (6) and its first I can start at 4 + 4*2 - 2 = 10; idle 4 before it.
  // Busy 32 + 4 = 36.
  cases.push_back(
      {"loop, I > W, limit 6", Options(4, 1, 8, SearchPlacement::kLoop, {1, 2, 1}, 0, 6), 38, 36});
  // V placement, heterogeneous stages (stage 0 half, stage 7 double): zbv 68; the bound is 60
  // (rank 0 holds stages 0 and 7: 8 * (1.5 + 6) = 60), which no order found reaches.
  SearchOptions hetero = Options(4, 2, 8, SearchPlacement::kV, {1, 1, 1}, 0, 8);
  hetero.costs = Heterogeneous(8, {1, 1, 1});
  hetero.iterations = 1000;
  cases.push_back({"V, heterogeneous stages", hetero, 68, 0});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const SearchResult r = MustSearch(c.o);
    // The named schedule is evaluated here; CheckSearched compares with every applicable one, so a
    // built-in added later is covered too.
    const std::string published = c.o.placement == SearchPlacement::kV ? "zbv" : "zb-h1";
    Result<Schedule> s = MakeSchedule(published, ScheduleParams{c.o.p, c.o.v, c.o.m, 0});
    ASSERT_TRUE(s.ok());
    EXPECT_DOUBLE_EQ(MustEvaluate(*s, c.o).makespan, c.builtin);
    const double makespan = CheckSearched(c.o, r);
    if (c.searched > 0) {
      EXPECT_DOUBLE_EQ(makespan, c.searched);
    }
    EXPECT_LT(r.evaluation.makespan, c.builtin);
  }
}

// Uneven work (uneven_work.h) reaches the search through the costs and the link slowdowns: the
// built-ins' fixed orders wait on the long microbatches and the slow link, the search works around
// them. A straggler that is the bottleneck leaves nothing to gain: zb-h1 is already at the bound.
TEST(ScheduleSearch, UnevenWork) {
  SearchOptions seqlens = Options(4, 1, 8, SearchPlacement::kLoop, {1, 1, 1}, 0, 4);
  UnevenWork work;
  work.microbatch_seqlens = {512, 2048, 1024, 1024, 4096, 512, 1024, 2048};
  work.reference_seqlen = 1024;
  work.attention_share = 0.3;
  Result<Costs> costs = ApplyUnevenWork(seqlens.costs, Placement::Loop(4, 1), 8, work);
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  seqlens.costs = *costs;
  const SearchResult a = MustSearch(seqlens);
  EXPECT_LT(CheckSearched(seqlens, a), a.best_builtin_makespan);

  SearchOptions slow_link = Options(4, 1, 8, SearchPlacement::kLoop, {1, 1, 1}, 0.25, 4);
  slow_link.evaluate.link_slowdowns = {LinkSlowdown{1, 2, 8.0}};
  const SearchResult b = MustSearch(slow_link);
  // zb-h1's fixed order waits on the slow link in its steady state too: 42.5 against 27 without.
  EXPECT_DOUBLE_EQ(b.best_builtin_makespan, 42.5);
  EXPECT_LT(CheckSearched(slow_link, b), b.best_builtin_makespan);
  // The bound: rank 3 starts after 3 forwards, 2 crossings at 0.25 and one at 2: 5.5 + 24.
  EXPECT_DOUBLE_EQ(b.lower_bound, 29.5);

  SearchOptions straggler = Options(4, 1, 8, SearchPlacement::kLoop, {1, 1, 1}, 0, 4);
  work = UnevenWork{};
  work.rank_speed = {1, 1, 0.5, 1};
  costs = ApplyUnevenWork(straggler.costs, Placement::Loop(4, 1), 8, work);
  ASSERT_TRUE(costs.ok());
  straggler.costs = *costs;
  const SearchResult c = MustSearch(straggler);
  // Rank 2 at half speed: it starts after 2 forwards and is busy 8 * 6 = 48: 50.
  EXPECT_DOUBLE_EQ(c.lower_bound, 50);
  EXPECT_DOUBLE_EQ(CheckSearched(straggler, c), 50);
  EXPECT_DOUBLE_EQ(c.best_builtin_makespan, 50);
}

// Where zero bubble is reachable the search reaches the bound: the rank that starts last
// (rank p-1 after p-1 forwards) is busy from then on.
TEST(ScheduleSearch, ReachesTheLowerBoundWhereZeroBubbleIsReachable) {
  // Loop v = 1, unit, no limit: 8*3 + 3 = 27 (ZB-H2's makespan).
  SearchOptions loop = Options(4, 1, 8, SearchPlacement::kLoop, {1, 1, 1});
  const SearchResult a = MustSearch(loop);
  EXPECT_DOUBLE_EQ(a.lower_bound, 27);
  EXPECT_DOUBLE_EQ(CheckSearched(loop, a), 27);
  // V, unit, limit 2p = 8: 2*8*3 + 3 = 51 (ZB-V's).
  SearchOptions v = Options(4, 2, 8, SearchPlacement::kV, {1, 1, 1}, 0, 8);
  const SearchResult b = MustSearch(v);
  EXPECT_DOUBLE_EQ(b.lower_bound, 51);
  EXPECT_DOUBLE_EQ(CheckSearched(v, b), 51);
  // p = 1: no pipeline, no bubble: 5 microbatches of F + I + W = 1 + 2 + 1.
  SearchOptions one = Options(1, 1, 5, SearchPlacement::kLoop, {1, 2, 1});
  EXPECT_DOUBLE_EQ(CheckSearched(one, MustSearch(one)), 20);
}

TEST(ScheduleSearch, LowerBoundClosedForms) {
  // The single-microbatch chain dominates at m = 1: forwards 4*1, input backwards 4*2, the first
  // stage's W 1, three crossings each way at latency 2: 4 + 8 + 1 + 12 = 25.
  Schedule one = MakeEmptySchedule("x", 4, 1, 1, Placement::Loop(4, 1));
  EvaluateOptions latency;
  latency.p2p_latency = 2;
  EXPECT_DOUBLE_EQ(MakespanLowerBound(one, Costs::Uniform(4, {1, 2, 1}), latency), 25);
  // Rank heads: at m = 8, rank 3 starts after 3 forwards and 3 crossings (3 + 1.5) and is busy
  // 8*4 = 32: 36.5; the chain is 4 + 8 + 1 + 3 = 16.
  Schedule eight = MakeEmptySchedule("x", 4, 1, 8, Placement::Loop(4, 1));
  latency.p2p_latency = 0.5;
  EXPECT_DOUBLE_EQ(MakespanLowerBound(eight, Costs::Uniform(4, {1, 2, 1}), latency), 36.5);
  // A measured full backward cheaper than I + W lowers the busy time: B = 2 instead of 3.
  Costs fused = Costs::Uniform(4, {1, 2, 1});
  fused.full_backward.assign(4, 2.0);
  EXPECT_DOUBLE_EQ(MakespanLowerBound(eight, fused, {}), 3 + 8 * 3);
}

TEST(ScheduleSearch, DeterministicForASeed) {
  SearchOptions o = Options(4, 2, 8, SearchPlacement::kV, {1, 2, 1}, 0.25, 10);
  const SearchResult a = MustSearch(o);
  const SearchResult b = MustSearch(o);
  EXPECT_EQ(a.schedule.ranks, b.schedule.ranks);
  EXPECT_EQ(a.iterations_run, 200);
  EXPECT_EQ(a.candidates, b.candidates);
  o.seed = 7;
  CheckSearched(o, MustSearch(o));
}

// A time limit that has passed before the search starts: the built-ins are still evaluated and the
// first greedy policy still runs, nothing else; the result keeps every promise.
TEST(ScheduleSearch, ATimeLimitStopsTheSearchButNotTheGuarantees) {
  SearchOptions o = Options(4, 2, 8, SearchPlacement::kV, {1, 2, 1}, 0.5, 8);
  o.iterations = 1000;
  o.time_limit_s = 1e-9;
  const SearchResult r = MustSearch(o);
  EXPECT_EQ(r.iterations_run, 0);
  int applicable = 0;
  BestBuiltin(o, &applicable);
  EXPECT_GE(applicable, 2);                 // zbv and dualpipe-v (above the limit), at least
  EXPECT_EQ(r.candidates, applicable + 1);  // and one policy
  CheckSearched(o, r);
}

TEST(ScheduleSearch, TheCsvRoundTrips) {
  const SearchOptions o = Options(4, 2, 8, SearchPlacement::kV, {1, 2, 1}, 0.5, 0);
  const SearchResult r = MustSearch(o);
  Result<Schedule> back = ParseComputeCsv(ToComputeCsv(r.schedule), "csv:search");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(Validate(*back).ok());
  EXPECT_EQ(back->ranks, r.schedule.ranks);
  EXPECT_EQ(back->placement, r.schedule.placement);
  EXPECT_DOUBLE_EQ(MustEvaluate(*back, o).makespan, r.evaluation.makespan);
}

TEST(ScheduleSearch, RejectsBadOptions) {
  auto message = [](const SearchOptions& o) {
    Result<SearchResult> r = SearchSchedule(o);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_EQ(message(Options(4, 1, 8, SearchPlacement::kV, {1, 1, 1})),
            "-v = 1: the V placement holds exactly 2 stages per rank (v = 2)");
  EXPECT_NE(message(Options(4, 2, 8, SearchPlacement::kLoop, {1, 1, 1}, 0, 1))
                .find("--memory-limit = 1: a microbatch holds 2 chunks"),
            std::string::npos);
  SearchOptions wrong = Options(4, 1, 8, SearchPlacement::kLoop, {1, 1, 1});
  wrong.costs = Costs::Uniform(3, {1, 1, 1});
  EXPECT_EQ(message(wrong), "stage costs = 3: need one per stage (4)");
  EXPECT_NE(message(Options(64, 4, 1024, SearchPlacement::kLoop, {1, 1, 1})).find("p*v*m = 262144"),
            std::string::npos);
  SearchOptions negative = Options(2, 1, 2, SearchPlacement::kLoop, {1, 1, 1});
  negative.iterations = -1;
  EXPECT_EQ(message(negative), "--iterations = -1: must be at least 0");
  Result<SearchPlacement> placement = ParseSearchPlacement("zigzag");
  ASSERT_FALSE(placement.ok());
  EXPECT_NE(placement.status().message().find("--placement = 'zigzag'"), std::string::npos);
}

}  // namespace
}  // namespace pipette
