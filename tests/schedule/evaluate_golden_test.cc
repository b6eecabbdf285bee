// Evaluate() bit for bit: every built-in schedule over a grid of p, v and m, with uniform,
// heterogeneous, measured-B, slowed-link and per-microbatch costs, digested (FNV-1a over the bits
// of makespan, bubble, busy, peaks and every timeline interval) and compared with the digest the
// evaluator before the fast path (commit fa18936) produced. And the fast path's cost table against
// Costs::Of(): the same costs written as one per-microbatch variant (which reads Of) give the same
// evaluation, bit for bit.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule.h"

namespace pipette {
namespace {

class Digest {
 public:
  void Add(double x) {
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    Add(bits);
  }
  void Add(std::uint64_t x) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (x >> (8 * i)) & 0xff;
      hash_ *= 1099511628211ull;
    }
  }
  void Add(const Evaluation& e) {
    Add(e.makespan);
    Add(e.bubble_ratio);
    for (double b : e.busy) Add(b);
    for (int a : e.peak_activations) Add(static_cast<std::uint64_t>(a));
    for (int w : e.peak_pending_w) Add(static_cast<std::uint64_t>(w));
    for (const auto& rank : e.timeline) {
      for (const Interval& span : rank) {
        Add(span.start);
        Add(span.end);
      }
    }
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 14695981039346656037ull;
};

// Per stage, costs that differ by stage and are not exact binary fractions.
Costs Heterogeneous(int stages, bool measured_b) {
  Costs costs;
  for (int s = 0; s < stages; ++s) {
    costs.stages.push_back({1.0 + 0.13 * s, 1.7 + 0.05 * (s % 5), 0.9 + 0.07 * (s % 3)});
    if (measured_b) costs.full_backward.push_back(2.3 + 0.11 * (s % 4));
  }
  return costs;
}

// The same costs as one per-microbatch variant: evaluated through Costs::Of.
Costs AsVariant(const Costs& costs, int m) {
  Costs variant = costs;
  variant.variants = {{costs.stages, costs.full_backward}};
  variant.microbatch_variant.assign(m, 0);
  return variant;
}

// Two variant sets, odd microbatches 1.6x as long.
Costs TwoLengths(const Costs& costs, int m) {
  Costs uneven = AsVariant(costs, m);
  StageCostSet longer = uneven.variants[0];
  for (StageCost& c : longer.stages) c = {1.6 * c.f, 1.6 * c.i, 1.6 * c.w};
  uneven.variants.push_back(longer);
  for (int i = 0; i < m; ++i) uneven.microbatch_variant[i] = i % 2;
  return uneven;
}

void ExpectSame(const Evaluation& a, const Evaluation& b, const std::string& label) {
  Digest da, db;
  da.Add(a);
  db.Add(b);
  EXPECT_EQ(da.value(), db.value()) << label;
  EXPECT_EQ(a.makespan, b.makespan) << label;
}

// Runs every case; returns the digest of every evaluation, in order, and counts them.
std::uint64_t DigestOfGrid(int& evaluations) {
  Digest digest;
  evaluations = 0;
  for (const ScheduleGenerator* g : AllScheduleGenerators()) {
    for (int p : {2, 4, 5}) {
      for (int v : {1, 2, 3}) {
        for (int m : {1, p, 2 * p + 1, 4 * p}) {
          const ScheduleParams params{p, v, m, 0};
          if (!g->Check(params).ok()) continue;
          const std::string label = fmt::format("{} p={} v={} m={}", g->name(), p, v, m);
          Result<Schedule> s = MakeSchedule(g->name(), params);
          EXPECT_TRUE(s.ok()) << label << ": " << s.status().message();
          if (!s.ok()) continue;
          Result<Program> program = Lower(*s);
          EXPECT_TRUE(program.ok()) << label;
          if (!program.ok()) continue;
          const int stages = s->num_stages();
          struct Case {
            Costs costs;
            EvaluateOptions options;
          };
          std::vector<Case> cases(4);
          cases[0].costs = Costs::Uniform(stages, StageCost{1, 2, 1});
          cases[1].costs = Heterogeneous(stages, false);
          cases[1].options.p2p_latency = 0.31;
          cases[2].costs = Heterogeneous(stages, true);
          cases[2].options.p2p_latency = 0.07;
          cases[2].options.link_slowdowns = {{0, 1, 2.5}};
          cases[3].costs = TwoLengths(Heterogeneous(stages, true), m);
          cases[3].options.p2p_latency = 0.19;
          for (Case& c : cases) {
            for (bool timeline : {false, true}) {
              c.options.record_timeline = timeline;
              Result<Evaluation> e = Evaluate(*program, c.costs, c.options);
              EXPECT_TRUE(e.ok()) << label << ": " << e.status().message();
              if (!e.ok()) continue;
              digest.Add(*e);
              ++evaluations;
              if (c.costs.microbatch_variant.empty()) {  // the table against Costs::Of
                Result<Evaluation> of = Evaluate(*program, AsVariant(c.costs, m), c.options);
                EXPECT_TRUE(of.ok()) << label;
                if (of.ok()) ExpectSame(*e, *of, label);
              }
            }
          }
        }
      }
    }
  }
  return digest.value();
}

TEST(EvaluateGolden, EveryScheduleEvaluatesBitForBitAsBeforeTheFastPath) {
  int evaluations = 0;
  const std::uint64_t digest = DigestOfGrid(evaluations);
  // Both computed by the evaluator of commit fa18936 (before the cost table and the inlined
  // message slots) on this grid.
  EXPECT_EQ(evaluations, 1888) << "evaluations";
  EXPECT_EQ(digest, 0xf9329c3619944d31ull) << fmt::format("digest 0x{:016x}", digest);
}

// No built-in schedule overlaps a forward with an input-gradient backward, (F;I): one by hand, on
// both ranks, priced by the table and by Costs::Of alike (F of stage s plus I of the back stage).
TEST(EvaluateGolden, OverlappedForwardWithInputBackwardCostsTheSameThroughTheTable) {
  Schedule s = MakeEmptySchedule("by-hand", 2, 1, 3, Placement::Loop(2, 1));
  using A = Action;
  s.ranks[0] = {A::F(0, 0), A::F(0, 1), A::Overlap(A::F(0, 2), A::I(0, 0)),
                A::W(0, 0), A::I(0, 1), A::W(0, 1),
                A::I(0, 2), A::W(0, 2)};
  s.ranks[1] = {A::F(1, 0),
                A::Overlap(A::F(1, 1), A::I(1, 0)),
                A::Overlap(A::F(1, 2), A::I(1, 1)),
                A::W(1, 0),
                A::I(1, 2),
                A::W(1, 1),
                A::W(1, 2)};
  Result<Program> program = Lower(s);
  ASSERT_TRUE(program.ok()) << program.status().message();
  for (bool measured_b : {false, true}) {
    EvaluateOptions options;
    options.p2p_latency = 0.23;
    options.record_timeline = true;
    const Costs costs = Heterogeneous(2, measured_b);
    Result<Evaluation> table = Evaluate(*program, costs, options);
    Result<Evaluation> of = Evaluate(*program, AsVariant(costs, 3), options);
    ASSERT_TRUE(table.ok() && of.ok());
    ExpectSame(*table, *of, measured_b ? "measured B" : "I + W");
    // Rank 1's first overlapped cell, (1F1;1I0): it starts when rank 1 has run 1F0 (after 0F0's
    // message) and 0F1's message has arrived, and costs F + I of stage 1.
    const auto& rank1 = program->ranks[1].instructions;
    const auto cell = std::find_if(rank1.begin(), rank1.end(), [](const Instruction& in) {
      return in.action.kind == ActionKind::kOverlapped && in.action.microbatch == 1;
    });
    ASSERT_NE(cell, rank1.end());
    const Interval& span = table->timeline[1][cell - rank1.begin()];
    const double f0 = costs.stages[0].f, f1 = costs.stages[1].f, i1 = costs.stages[1].i;
    const double start = std::max(f0 + 0.23 + f1, (f0 + f0) + 0.23);
    EXPECT_EQ(span.start, start) << "(1F1;1I0)";
    EXPECT_EQ(span.end, start + (f1 + i1)) << "(1F1;1I0)";
  }
}

}  // namespace
}  // namespace pipette
