// Closed forms of the makespan for arbitrary per-chunk costs F, I, W (B = I + W), checked over a
// grid of p, m and v.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "test_util.h"

namespace pipette {
namespace {

using testing::MustEvaluate;
using testing::MustMake;

// Cost sets with F, I and W mostly different.
// Relative tolerance for sums of non-representable costs such as 0.7.
::testing::AssertionResult Near(double actual, double expected) {
  if (std::abs(actual - expected) <= 1e-9 * std::max(1.0, std::abs(expected))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << actual << " != " << expected;
}

const StageCost kCosts[] = {{1, 1, 1},       {1, 2, 1},        {2, 3, 1.5},
                            {0.7, 1.3, 0.4}, {1.5, 0.5, 1.75}, {2, 1, 0.5}};

TEST(ClosedForm, GpipeAndOneFOneBTakeMPlusPMinusOneSlots) {
  for (const StageCost& c : kCosts) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 3 * p + 2; ++m) {
        const double expected = (m + p - 1) * (c.f + c.b());
        EXPECT_TRUE(Near(MustEvaluate(MustMake("gpipe", p, m), c).makespan, expected))
            << "gpipe p=" << p << " m=" << m;
        EXPECT_TRUE(Near(MustEvaluate(MustMake("1f1b", p, m), c).makespan, expected))
            << "1f1b p=" << p << " m=" << m;
        EXPECT_TRUE(Near(MustEvaluate(MustMake("eager-1f1b", p, m), c).makespan, expected))
            << "eager-1f1b p=" << p << " m=" << m;
      }
    }
  }
}

TEST(ClosedForm, BubbleRatioOfOneFOneBIsPMinusOneOverMPlusPMinusOne) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 20; ++m) {
      EXPECT_NEAR(MustEvaluate(MustMake("1f1b", p, m), {1, 2, 1}).bubble_ratio,
                  double(p - 1) / (m + p - 1), 1e-12);
    }
  }
}

TEST(ClosedForm, EagerOneFOneBHidesAllButTwoLatenciesPerHop) {
  // (m+p-1)(F+B) + 2(p-1)c holds while a round trip fits in one steady-state slot: 2c <= F + B.
  for (const StageCost& c : kCosts) {
    const double slot = c.f + c.b();
    for (double latency : {0.1 * slot, 0.25 * slot, 0.4 * slot, 0.5 * slot}) {
      for (int p = 1; p <= 8; ++p) {
        for (int m = p; m <= 4 * p; ++m) {
          const double expected = (m + p - 1) * slot + 2 * (p - 1) * latency;
          EXPECT_TRUE(
              Near(MustEvaluate(MustMake("eager-1f1b", p, m), c, latency).makespan, expected))
              << "p=" << p << " m=" << m << " c=" << latency;
        }
      }
    }
    // Beyond that the round trip no longer hides behind one slot and the form underestimates.
    const double latency = 0.6 * slot;
    for (int p = 2; p <= 8; ++p) {
      const int m = 2 * p;
      EXPECT_GT(MustEvaluate(MustMake("eager-1f1b", p, m), c, latency).makespan,
                (m + p - 1) * slot + 2 * (p - 1) * latency + 1e-9)
          << "p=" << p;
    }
  }
}

TEST(ClosedForm, OneFOneBWithLatencyIsNeverFasterThanEager) {
  for (int p = 2; p <= 8; ++p) {
    for (int m = 2 * p; m <= 4 * p; m += p) {
      const double eager = MustEvaluate(MustMake("eager-1f1b", p, m), {1, 1, 1}, 0.5).makespan;
      const double plain = MustEvaluate(MustMake("1f1b", p, m), {1, 1, 1}, 0.5).makespan;
      EXPECT_GT(plain, eager) << "p=" << p << " m=" << m;
    }
  }
}

TEST(ClosedForm, InterleavedSchedulesTakeMVPlusPMinusOneChunkSlots) {
  for (const char* name :
       {"interleaved-1f1b", "interleaved-1f1b-plus-one", "kimi-k2", "interleaved-gpipe"}) {
    for (const StageCost& c : kCosts) {
      for (int p = 1; p <= 8; ++p) {
        for (int v = 1; v <= 4; ++v) {
          for (int m = p; m <= 4 * p; m += p) {
            const double expected = (m * v + p - 1) * (c.f + c.b());
            EXPECT_TRUE(Near(MustEvaluate(MustMake(name, p, m, v), c).makespan, expected))
                << name << " p=" << p << " v=" << v << " m=" << m;
          }
        }
      }
    }
  }
}

// The zero-bubble forms assume a deferred W fits the slot it fills: W <= min(F, I).
bool WFitsSlots(const StageCost& c) { return c.w <= std::min(c.f, c.i); }

TEST(ClosedForm, ZeroBubbleH1SavesTwoWPerHop) {
  int checked = 0;
  for (const StageCost& c : kCosts) {
    if (!WFitsSlots(c)) continue;
    for (int p = 1; p <= 8; ++p) {
      for (int m = p; m <= 4 * p; ++m) {
        const double expected = m * (c.f + c.i + c.w) + (p - 1) * (c.f + c.i - c.w);
        EXPECT_TRUE(Near(MustEvaluate(MustMake("zb-h1", p, m), c).makespan, expected))
            << "p=" << p << " m=" << m << " F=" << c.f << " I=" << c.i << " W=" << c.w;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(ClosedForm, InterleavedZeroBubbleLosesOneChunkRampPerHop) {
  for (const StageCost& c : kCosts) {
    if (!WFitsSlots(c)) continue;
    for (int p = 1; p <= 8; ++p) {
      for (int m = p; m <= 4 * p; m += p) {
        for (int v = 1; v <= 4; ++v) {
          const double expected = m * v * (c.f + c.i + c.w) + (p - 1) * (c.f + c.i - c.w);
          EXPECT_TRUE(Near(MustEvaluate(MustMake("interleaved-zb", p, m, v), c).makespan, expected))
              << "p=" << p << " v=" << v << " m=" << m << " F=" << c.f << " I=" << c.i
              << " W=" << c.w;
        }
      }
    }
  }
}

TEST(ClosedForm, ZbvLosesOnlyTheWarmupRampForThePublishedCostRatios) {
  // PyTorch/ZB README: makespan - 2m(F+I+W) = p-1 for F=I=W=1 and 2(p-1) for F=1, I=2, W=1,
  // i.e. (p-1)(F+I-W). (For other ratios, e.g. F=2, I=W=1, it is not exact; see docs.)
  for (const StageCost& c : {StageCost{1, 1, 1}, StageCost{1, 2, 1}, StageCost{2, 2, 2}}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 4 * p; ++m) {
        if (m < 2 * p) continue;
        const double expected = 2 * m * (c.f + c.i + c.w) + (p - 1) * (c.f + c.i - c.w);
        EXPECT_TRUE(Near(MustEvaluate(MustMake("zbv", p, m), c).makespan, expected))
            << "p=" << p << " m=" << m << " F=" << c.f << " I=" << c.i << " W=" << c.w;
      }
    }
  }
}

TEST(ClosedForm, ZeroBubbleH2IsBubbleFreePerRankWhenFIAndWAreEqual) {
  // The authors' per-rank span m(F+I+W) + (p-1)(F+I-2W): zero bubble on every rank when
  // F = I = W, from the rank's first action to its last.
  for (double t : {1.0, 0.5, 2.0}) {
    const StageCost c{t, t, t};
    for (int p = 1; p <= 8; ++p) {
      for (int m = 2 * p; m <= 4 * p; ++m) {
        Schedule s = MustMake("zb-h2", p, m);
        Program program = *Lower(s);
        EvaluateOptions options;
        options.record_timeline = true;
        Evaluation e = *Evaluate(program, Costs::Uniform(p, c), options);
        for (int r = 0; r < p; ++r) {
          double first = e.makespan, last = 0;
          const auto& ins = program.ranks[r].instructions;
          for (std::size_t k = 0; k < ins.size(); ++k) {
            if (!IsCompute(ins[k].action.kind)) continue;
            first = std::min(first, e.timeline[r][k].start);
            last = std::max(last, e.timeline[r][k].end);
          }
          EXPECT_TRUE(Near(last - first, 3 * m * t)) << "p=" << p << " m=" << m << " rank " << r;
          EXPECT_TRUE(Near(first, r * t)) << "p=" << p << " m=" << m << " rank " << r;
        }
      }
    }
  }
}

TEST(ClosedForm, ZeroBubbleH2MakespanIsTheForwardRampWhenIAtMostTwoW) {
  // Measured from a common start, only the ramp of the first forwards remains: m(F+I+W) + (p-1)F,
  // as long as an I fits in the two deferred Ws that cover it (I <= 2W).
  for (const StageCost& c : {StageCost{1, 1, 1}, StageCost{1, 2, 1}, StageCost{2, 1, 1},
                             StageCost{2, 3, 1.5}, StageCost{1, 2, 1.5}, StageCost{1, 1, 0.5}}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 2 * p; m <= 4 * p; ++m) {
        const double expected = m * (c.f + c.i + c.w) + (p - 1) * c.f;
        EXPECT_TRUE(Near(MustEvaluate(MustMake("zb-h2", p, m), c).makespan, expected))
            << "p=" << p << " m=" << m << " F=" << c.f << " I=" << c.i << " W=" << c.w;
      }
    }
  }
}

TEST(ClosedForm, DualPipeBubblesMatchDeepSeeksFormulaForF1B2W1) {
  // DeepSeek's README: bubble (PP/2 - 1)(F&B + B - 3W) with F&B = F + B for atomic cells; PP is
  // the number of ranks for DualPipe and the number of stages (2p) for DualPipe-V.
  const StageCost c{1, 1, 1};  // F = 1, B = 2, W = 1
  const double formula_unit = (c.f + c.b()) + c.b() - 3 * c.w;
  for (int p = 2; p <= 8; p += 2) {
    for (int m = 2 * p; m <= 4 * p; m += 2) {
      const double dualpipe = MustEvaluate(MustMake("dualpipe", p, m), c).makespan;
      EXPECT_DOUBLE_EQ(dualpipe - m * (c.f + c.b()), (p / 2 - 1) * formula_unit)
          << "dualpipe p=" << p << " m=" << m;
    }
  }
  for (int p = 1; p <= 8; ++p) {
    for (int m = 2 * p; m <= 4 * p; ++m) {
      const double dualpipe_v = MustEvaluate(MustMake("dualpipe-v", p, m), c).makespan;
      EXPECT_DOUBLE_EQ(dualpipe_v - 2 * m * (c.f + c.b()), (p - 1) * formula_unit)
          << "dualpipe-v p=" << p << " m=" << m;
    }
  }
}

}  // namespace
}  // namespace pipette
