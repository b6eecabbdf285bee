// Internal to the schedule layer: walks a structurally checked compute-only schedule in an order
// that respects every dependency, calling a visitor for each action as it is placed. Ranks take
// turns, one action per turn, like time steps; an action is placed only once its inputs have been
// placed. validate() uses it to find deadlocks, lower() to place sends and receives.
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/schedule/schedule.h"

namespace pipette::internal {

// The checks of Validate() except the deadlock search: shapes, ranges, placement, routes,
// completeness and per-stage order. Defined in validate.cc.
Status CheckStructure(const Schedule& schedule);

class DependencyWalk {
 public:
  explicit DependencyWalk(const Schedule& schedule)
      : s_(schedule),
        forward_done_(static_cast<std::size_t>(schedule.num_stages()) * schedule.m, 0),
        backward_done_(forward_done_.size(), 0) {}

  // Calls visit(rank, action) for every action in a dependency-respecting global order. Returns
  // FailedPrecondition describing the deadlock if the ranks get stuck. REQUIRES: every action's
  // stage and microbatch are in range and the stage lies on the microbatch's route.
  //
  // Rounds act like time steps: in each round every rank that can go places one action, in rank
  // order. A rank whose next action lacks an input is parked on that input and rejoins the round
  // after its producer completes it, so the walk costs O(actions log p), not O(rounds * p).
  template <typename Visitor>
  Status Run(Visitor&& visit) {
    const int p = s_.p;
    std::vector<std::size_t> next(p, 0);
    std::vector<int> round, following, woken;
    for (int r = 0; r < p; ++r) {
      if (!s_.ranks[r].empty()) round.push_back(r);
    }
    parked_on_.assign(p, kNotParked);
    std::size_t remaining = s_.num_actions();
    while (remaining > 0) {
      if (round.empty()) return Deadlock(next);
      for (int r : round) {
        const std::vector<Action>& actions = s_.ranks[r];
        const Action& a = actions[next[r]];
        // Ranks take turns one action each, too many streams for the hardware to follow: load
        // this rank's next cache line ahead of its turns.
        __builtin_prefetch(actions.data() + std::min(next[r] + kPrefetchAhead, actions.size()));
        const Action need = Missing(a);
        if (need.stage >= 0) {
          parked_on_[r] = Slot(need);
          continue;
        }
        Complete(a, woken);
        visit(r, a);
        --remaining;
        if (++next[r] < s_.ranks[r].size()) following.push_back(r);
      }
      // `following` is in rank order already; merge in the (few) woken ranks.
      if (woken.empty()) {
        round.swap(following);
      } else {
        std::sort(woken.begin(), woken.end());
        round.clear();
        std::merge(following.begin(), following.end(), woken.begin(), woken.end(),
                   std::back_inserter(round));
        woken.clear();
      }
      following.clear();
    }
    return Status::Ok();
  }

 private:
  std::size_t Key(int stage, int mb) const { return static_cast<std::size_t>(stage) * s_.m + mb; }

  // Returns the action this compute action waits for, or an action with stage -1 if none.
  Action Missing(const Action& a) const {
    if (a.kind == ActionKind::kOverlapped) {
      Action f = Missing(a.forward_half());
      return f.stage >= 0 ? f : Missing(a.backward_half());
    }
    const int in = InputStage(s_.routes[a.microbatch], a);
    switch (a.kind) {
      case ActionKind::kForward:
        if (in >= 0 && !forward_done_[Key(in, a.microbatch)]) return Action::F(in, a.microbatch);
        break;
      case ActionKind::kInputBackward:
      case ActionKind::kFullBackward:
        if (!forward_done_[Key(a.stage, a.microbatch)]) return Action::F(a.stage, a.microbatch);
        if (in >= 0 && !backward_done_[Key(in, a.microbatch)]) return Action::B(in, a.microbatch);
        break;
      case ActionKind::kWeightBackward:
        if (!backward_done_[Key(a.stage, a.microbatch)]) return Action::I(a.stage, a.microbatch);
        break;
      default:
        break;
    }
    return Action::F(-1, -1);
  }

  // The slot of a completed output: the forward of (stage, mb), or its input-gradient backward
  // (what B, I and W wait for).
  std::size_t Slot(const Action& a) const {
    return 2 * Key(a.stage, a.microbatch) + (a.kind == ActionKind::kForward ? 0 : 1);
  }

  // Marks `a` done and moves a rank parked on its output (its consumer on another rank) to `woken`.
  void Complete(const Action& a, std::vector<int>& woken) {
    switch (a.kind) {
      case ActionKind::kForward:
        forward_done_[Key(a.stage, a.microbatch)] = 1;
        break;
      case ActionKind::kInputBackward:
      case ActionKind::kFullBackward:
        backward_done_[Key(a.stage, a.microbatch)] = 1;
        break;
      case ActionKind::kOverlapped:
        Complete(a.forward_half(), woken);
        Complete(a.backward_half(), woken);
        return;
      default:
        return;
    }
    const int consumer_stage = ConsumerStage(s_.routes[a.microbatch], a);
    if (consumer_stage < 0) return;
    const int consumer = s_.placement.rank_of(consumer_stage);
    if (parked_on_[consumer] == Slot(a)) {
      parked_on_[consumer] = kNotParked;
      woken.push_back(consumer);
    }
  }

  Status Deadlock(const std::vector<std::size_t>& next) const {
    std::string waits;
    int listed = 0;
    for (int r = 0; r < s_.p; ++r) {
      if (next[r] == s_.ranks[r].size()) continue;
      if (listed == 4) {
        waits += "; ...";
        break;
      }
      const Action& a = s_.ranks[r][next[r]];
      Action need = Missing(a);
      std::string need_text = ToString(need);
      if (need.kind == ActionKind::kFullBackward) {
        need_text = fmt::format("the backward (I or B) of stage {} microbatch {}", need.stage,
                                need.microbatch);
      }
      waits += fmt::format("{}rank {} is stuck at action {} ({}) waiting for {} (rank {})",
                           listed ? "; " : "", r, next[r], ToString(a), need_text,
                           s_.placement.rank_of(need.stage));
      ++listed;
    }
    return Status::FailedPrecondition("deadlock: " + waits);
  }

  static constexpr std::size_t kNotParked = static_cast<std::size_t>(-1);
  static constexpr std::size_t kPrefetchAhead = 8;  // actions (160 bytes)

  const Schedule& s_;
  std::vector<std::size_t> parked_on_;  // per rank: the slot it waits for, or kNotParked
  std::vector<std::uint8_t> forward_done_;
  std::vector<std::uint8_t> backward_done_;
};

}  // namespace pipette::internal
