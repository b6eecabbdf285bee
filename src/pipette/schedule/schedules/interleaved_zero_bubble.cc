// Interleaved zero bubble as PyTorch's ScheduleInterleavedZeroBubble ("ZB1P" over v chunks in the
// loop layout). With rounds = max(1, m/p) and mpr = m/rounds microbatches per round, rank r runs
// W_r = min((v-1)mpr + (p-1-r), m*v) warmup forwards (chunk (k/mpr) mod v), then steady steps of a
// forward, an input-gradient backward (chunk v-1 - ((k-W_r)/mpr) mod v) and, from step r on, the
// weight gradient of the oldest pending backward; then the cool-down backwards under the same W
// rule, then the remaining Ws. Each stage sees its microbatches in ascending order. With v = 1 this
// is exactly zb-h1.
#include <algorithm>
#include <vector>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

class InterleavedZeroBubbleGenerator final : public ScheduleGenerator {
 public:
  std::string_view name() const override { return "interleaved-zb"; }
  std::string_view summary() const override {
    return "interleaved zero bubble (ZB1P over v chunks; PyTorch ScheduleInterleavedZeroBubble)";
  }
  std::string_view constraints() const override {
    return "v >= 1 (default 2); m % max(1, floor(m/p)) = 0";
  }
  int default_v() const override { return 2; }
  Status Check(const ScheduleParams& params) const override {
    if (params.v < 1) return Status::InvalidArgument(fmt::format("v = {}: must be >= 1", params.v));
    const int rounds = std::max(1, params.m / params.p);
    if (params.m % rounds != 0) {
      return Status::InvalidArgument(
          fmt::format("m = {}: must be divisible by the number of rounds max(1, floor(m/p)) = {} "
                      "(PyTorch ScheduleInterleavedZeroBubble raises too; this order has no other "
                      "flavour; zbv (v = 2) and interleaved-1f1b with --group-size run such m)",
                      params.m, rounds));
    }
    return Status::Ok();
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, v = params.v, m = params.m;
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, v, m, Placement::Loop(p, v));
    const int rounds = std::max(1, m / p);
    const int mpr = m / rounds;
    const int total = m * v;
    for (int r = 0; r < p; ++r) {
      const int warmup = std::min((v - 1) * mpr + (p - 1 - r), total);
      auto forward_stage = [&](int step) { return ((step / mpr) % v) * p + r; };
      auto backward_stage = [&](int step) { return (v - 1 - ((step - warmup) / mpr) % v) * p + r; };
      // Microbatch counters per chunk (stage s = chunk * p + r, so chunk = s / p).
      std::vector<int> next_f(v, 0), next_i(v, 0), next_w(v, 0);
      std::vector<int> pending_w;  // backward steps whose W has not been emitted, oldest first
      std::size_t w_done = 0;
      auto& actions = schedule.ranks[r];
      auto emit_w = [&]() {
        const int s = backward_stage(pending_w[w_done++]);
        actions.push_back(Action::W(s, next_w[s / p]++));
      };
      for (int step = 0; step < total + warmup; ++step) {
        // Steps [0, warmup): forwards; [warmup, total): steady; [total, total + warmup): cooldown.
        if (step < total) {
          const int s = forward_stage(step);
          actions.push_back(Action::F(s, next_f[s / p]++));
        }
        if (step < warmup) continue;
        const int s = backward_stage(step);
        actions.push_back(Action::I(s, next_i[s / p]++));
        pending_w.push_back(step);
        if (step - warmup >= r) emit_w();
      }
      while (w_done < pending_w.size()) emit_w();
    }
    return schedule;
  }
};

}  // namespace

const ScheduleGenerator& InterleavedZeroBubble() {
  static const InterleavedZeroBubbleGenerator generator;
  return generator;
}

}  // namespace pipette::schedules
