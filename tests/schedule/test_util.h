// Helpers shared by the schedule tests: build a schedule by name or abort the test, lower and
// evaluate it with uniform per-chunk costs.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"

namespace pipette::testing {

inline Schedule MustMake(const std::string& name, int p, int m, int v = 0, int group = 0) {
  Result<Schedule> s = MakeSchedule(name, ScheduleParams{p, v, m, group});
  EXPECT_TRUE(s.ok()) << name << " p=" << p << " v=" << v << " m=" << m << ": "
                      << s.status().message();
  return s.ok() ? std::move(s).value() : Schedule{};
}

inline Evaluation MustEvaluate(const Schedule& s, StageCost cost, double latency = 0.0) {
  Result<Program> program = Lower(s);
  EXPECT_TRUE(program.ok()) << program.status().message();
  if (!program.ok()) return {};
  EvaluateOptions options;
  options.p2p_latency = latency;
  Result<Evaluation> e = Evaluate(*program, Costs::Uniform(s.num_stages(), cost), options);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(e).value() : Evaluation{};
}

// Returns rank r's actions as one space-separated string.
inline std::string RankOrder(const Schedule& s, int r) {
  std::string out;
  for (const Action& a : s.ranks[r]) out += (out.empty() ? "" : " ") + ToString(a);
  return out;
}

}  // namespace pipette::testing
