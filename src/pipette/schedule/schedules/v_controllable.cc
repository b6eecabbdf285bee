// V-Half and V-Min ("Pipeline Parallelism with Controllable Memory", Qi, Wan, Amar, Lin 2024), as
// the authors' builder zbv_greedy.py (sail-sg/zero-bubble-pipeline-parallelism) makes them. V
// layout: rank r holds c0 = r and c1 = 2p-1-r. Per rank, four actions repeat every 6 slots (the
// building block): microbatch k's F(c0), F(c1), I(c1), I(c0) start at 6k + o with
//   V-Min:  o = r, 2p-1-r, 2p+g+r, 4p+g-1-r          (g = 2 if 3 | p, else 0)
//   V-Half: o = 2r, 3p-2-r, 3p+g+2r-1, 6p+g-r-2      (g = 3 if p is even, else 0)
// and each W takes the first idle slot after its I (FIFO). Then the authors' "squeeze and reorder",
// twice (with the Ws, then without them): in global slot order, every action outside the steady
// phase (from rank 0's first I(c0) to the first F(c0) of microbatch m-1) moves to the earliest
// free slot after its dependencies that keeps the rank's peak memory (F +1, W -1) at the
// pattern's peak; each pass ends with an eager unit-time replay that re-times the slots. Last,
// W(c1) then W(c0) fill the first idle slots after their I. The rank's order is its slot order.
// Peak activations (F to W, in half-size chunks): 2*floor((p+2)/2) for V-Half and
// 2*floor((p+4)/3) for V-Min when m is large enough, against 1F1B's 2p: 1/2 and 1/3 of it.
// Any p >= 1, m >= 1 (the script accepts every size; its orders were checked valid for p <= 10).
#include <algorithm>
#include <array>
#include <tuple>
#include <vector>

#include "pipette/schedule/schedules/constraints.h"
#include "pipette/schedule/schedules/generators.h"

namespace pipette::schedules {
namespace {

// Action types of the script, in its tie-breaking order: F(c0), F(c1), I(c1), I(c0), then the Ws
// (one list, or W(c1) and W(c0) once split).
enum Type { kF0 = 0, kF1 = 1, kI1 = 2, kI0 = 3, kW = 4 };
constexpr int kMemory[5] = {1, 1, 0, 0, -1};  // a W frees the activations its F kept

using Plan = std::vector<std::vector<int>>;  // per type, the slot of microbatch 0, 1, ...
enum class Setup { kHalf, kMin };

std::vector<Plan> BuildingBlocks(Setup setup, int p, int m) {
  std::vector<Plan> plans(p);
  for (int r = 0; r < p; ++r) {
    std::array<int, 4> o;
    if (setup == Setup::kMin) {
      const int g = p % 3 == 0 ? 2 : 0;
      o = {r, 2 * p - 1 - r, 2 * p + g + r, 4 * p + g - 1 - r};
    } else {
      const int g = p % 2 == 0 ? 3 : 0;
      o = {2 * r, 3 * p - 2 - r, 3 * p + g + 2 * r - 1, 6 * p + g - r - 2};
    }
    plans[r].resize(4);
    for (int t = 0; t < 4; ++t) {
      for (int k = 0; k < m; ++k) plans[r][t].push_back(o[t] + 6 * k);
    }
  }
  return plans;
}

int LastSlot(const Plan& plan) {
  int last = -1;
  for (const auto& slots : plan) {
    for (int s : slots) last = std::max(last, s);
  }
  return last;
}

// slot -> type occupying it, -1 if idle.
std::vector<int> SlotTypes(const Plan& plan) {
  std::vector<int> types(LastSlot(plan) + 1, -1);
  for (int t = 0; t < static_cast<int>(plan.size()); ++t) {
    for (int s : plan[t]) types[s] = t;
  }
  return types;
}

// Appends the W list(s): each W takes the first idle slot after its I, oldest first (with `split`,
// a pending W(c1) goes before a pending W(c0)); the ones left follow the last slot.
Plan PutW(Plan plan, bool split) {
  const std::vector<int> types = SlotTypes(plan);
  plan.resize(split ? 6 : 5);
  int pending[2] = {0, 0};
  for (int s = 0; s < static_cast<int>(types.size()); ++s) {
    if (types[s] >= 0) {
      if (types[s] == kI1 || types[s] == kI0) ++pending[split ? types[s] - kI1 : 0];
      continue;
    }
    for (int w = 0; w < 2; ++w) {
      if (pending[w] == 0) continue;
      plan[kW + w].push_back(s);
      --pending[w];
      break;
    }
  }
  int s = static_cast<int>(types.size()) - 1;
  for (int w = 0; w < 2; ++w) {
    for (; pending[w] > 0; --pending[w]) plan[kW + w].push_back(++s);
  }
  return plan;
}

// The script's mem_of_stage: the most activations held over the slots; without W lists, a pending
// W is taken to run in each idle slot.
int PeakMemory(const Plan& plan) {
  const bool has_w = plan.size() > 4;
  int current = 0, peak = 0, pending = 0;
  for (int type : SlotTypes(plan)) {
    if (type >= 0) {
      current += kMemory[type];
      if (type == kI1 || type == kI0) ++pending;
    } else if (!has_w && pending > 0) {
      --current;
      --pending;
    }
    peak = std::max(peak, current);
  }
  return peak;
}

using Event = std::tuple<int, int, int, int>;  // slot, rank, type, microbatch

std::vector<Event> GlobalSlotOrder(const std::vector<Plan>& plans) {
  std::vector<Event> events;
  for (int r = 0; r < static_cast<int>(plans.size()); ++r) {
    for (int t = 0; t < static_cast<int>(plans[r].size()); ++t) {
      for (int k = 0; k < static_cast<int>(plans[r][t].size()); ++k) {
        events.emplace_back(plans[r][t][k], r, t, k);
      }
    }
  }
  std::sort(events.begin(), events.end());
  return events;
}

// Eager replay in slot order with unit durations and no latency: the start time of every action
// becomes its new slot (the script's eager_execution_time with costs 1 and c = 0).
std::vector<Plan> Squeeze(const std::vector<Plan>& plans) {
  const int p = static_cast<int>(plans.size());
  std::vector<Plan> end(plans);
  std::vector<int> rank_free(p, 0);
  for (const auto& [slot, r, t, k] : GlobalSlotOrder(plans)) {
    int ready = rank_free[r];
    if ((t == kF0 || t == kI1) && r > 0) ready = std::max(ready, end[r - 1][t][k]);
    if ((t == kF1 || t == kI0) && r + 1 < p) ready = std::max(ready, end[r + 1][t][k]);
    if (t > kF0 && t < kW) ready = std::max(ready, end[r][t - 1][k]);
    if (k > 0) ready = std::max(ready, end[r][t][k - 1]);
    end[r][t][k] = ready + 1;
    rank_free[r] = ready + 1;
  }
  for (auto& plan : end) {
    for (auto& slots : plan) {
      for (int& s : slots) --s;
    }
  }
  return end;
}

// The earliest slot an action may move to: one after the slots of what it depends on.
int EarliestSlot(const std::vector<Plan>& plans, int r, int t, int k) {
  const int p = static_cast<int>(plans.size());
  const Plan& plan = plans[r];
  int after = -1;
  if ((t == kF0 || t == kI1) && r > 0) after = std::max(after, plans[r - 1][t][k]);
  if ((t == kF1 || t == kI0) && r + 1 < p) after = std::max(after, plans[r + 1][t][k]);
  if (t > kF0 && t < kW) after = std::max(after, plan[t - 1][k]);
  if (t == kW) {
    std::vector<int> inputs(plan[kI1]);
    inputs.insert(inputs.end(), plan[kI0].begin(), plan[kI0].end());
    std::sort(inputs.begin(), inputs.end());
    after = std::max(after, inputs[k]);
  }
  if (k > 0) after = std::max(after, plan[t][k - 1]);
  return after + 1;
}

// One pass of the script's reorder(): actions outside the steady phase move earlier where the
// memory allows (with consider_w, the Ws are placed first and move too).
std::vector<Plan> Reorder(std::vector<Plan> plans, bool consider_w, int m) {
  if (consider_w) {
    for (Plan& plan : plans) plan = PutW(std::move(plan), false);
  }
  int limit = 0, last = 0;
  for (const Plan& plan : plans) {
    limit = std::max(limit, PeakMemory(plan));
    last = std::max(last, LastSlot(plan));
  }
  std::vector<std::vector<char>> occupied(plans.size(), std::vector<char>(last + 1, 0));
  int phase = 0;
  for (const auto& [slot, r, t, k] : GlobalSlotOrder(plans)) {
    if (t == kI0 && r == 0 && phase == 0) phase = 1;
    const bool fixed = phase == 1 || (phase == 0 && !consider_w);
    if (phase == 1 && t == kF0 && k == m - 1) phase = 2;
    int placed = slot;
    if (!fixed) {
      for (int s = EarliestSlot(plans, r, t, k); s < slot; ++s) {
        if (occupied[r][s]) continue;
        plans[r][t][k] = s;
        if (PeakMemory(plans[r]) <= limit) {
          placed = s;
          break;
        }
      }
    }
    plans[r][t][k] = placed;
    occupied[r][placed] = 1;
  }
  if (!consider_w) {
    for (Plan& plan : plans) plan = PutW(std::move(plan), false);
  }
  return Squeeze(plans);
}

std::vector<Plan> DropW(std::vector<Plan> plans) {
  for (Plan& plan : plans) plan.resize(4);
  return plans;
}

// The rank's actions in slot order, once the split Ws are placed.
std::vector<Action> RankOrder(const Plan& four_types, int r, int p) {
  const Plan plan = PutW(four_types, /*split=*/true);
  std::vector<std::tuple<int, int, int>> order;  // slot, type, microbatch
  for (int t = 0; t < 6; ++t) {
    for (int k = 0; k < static_cast<int>(plan[t].size()); ++k) order.emplace_back(plan[t][k], t, k);
  }
  std::sort(order.begin(), order.end());
  const int c0 = r, c1 = 2 * p - 1 - r;
  // Type -> stage and kind: F(c0), F(c1), I(c1), I(c0), W(c1), W(c0).
  const int stage[6] = {c0, c1, c1, c0, c1, c0};
  std::vector<Action> actions;
  for (const auto& [slot, t, k] : order) {
    actions.push_back(t < 2   ? Action::F(stage[t], k)
                      : t < 4 ? Action::I(stage[t], k)
                              : Action::W(stage[t], k));
  }
  return actions;
}

class VControllableGenerator final : public VLayoutGenerator {
 public:
  explicit VControllableGenerator(Setup setup) : setup_(setup) {}
  std::string_view name() const override { return setup_ == Setup::kHalf ? "v-half" : "v-min"; }
  std::string_view summary() const override {
    return setup_ == Setup::kHalf
               ? "V-Half: V layout, 1/2 of 1F1B's activation memory (Qi et al. 2024, zbv_greedy)"
               : "V-Min: V layout, 1/3 of 1F1B's activation memory (Qi et al. 2024, zbv_greedy)";
  }
  Schedule Generate(const ScheduleParams& params) const override {
    const int p = params.p, m = params.m;
    std::vector<Plan> plans = BuildingBlocks(setup_, p, m);
    plans = DropW(Reorder(plans, /*consider_w=*/true, m));
    plans = DropW(Reorder(plans, /*consider_w=*/false, m));
    Schedule schedule = MakeEmptySchedule(std::string(name()), p, 2, m, Placement::VShape(p));
    for (int r = 0; r < p; ++r) schedule.ranks[r] = RankOrder(plans[r], r, p);
    return schedule;
  }

 private:
  Setup setup_;
};

}  // namespace

const ScheduleGenerator& VHalf() {
  static const VControllableGenerator generator(Setup::kHalf);
  return generator;
}

const ScheduleGenerator& VMin() {
  static const VControllableGenerator generator(Setup::kMin);
  return generator;
}

}  // namespace pipette::schedules
