// Megatron-LM's interleaved 1F1B order (forward_backward_pipelining_with_interleaving,
// get_schedule_table, get_pp_rank_microbatches), shared by interleaved-1f1b,
// interleaved-1f1b-plus-one and kimi-k2.
//
// Rank r holds chunks c = 0..v-1, chunk c being global stage c*p + r (loop layout). The schedule
// table lists the m*v virtual microbatches: for each group of G consecutive microbatches (the last
// group takes what remains), every chunk in ascending order, every microbatch of the group in
// ascending order. The k-th forward is (table[k].mb, chunk table[k].chunk); the k-th backward is
// (table[k].mb, chunk v-1-table[k].chunk). Rank r runs W_r = min(2(p-1-r) + (v-1)G + extra, m*v)
// warmup forwards, then m*v - W_r steady pairs F(W_r+k), B(k), then the remaining backwards.
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/schedule/action.h"
#include "pipette/schedule/schedule.h"
#include "pipette/schedule/schedule_generator.h"

namespace pipette::schedules {

// The group size actually used: params.group_size, or p when that is 0.
inline int MegatronGroupSize(const ScheduleParams& params) {
  return params.group_size > 0 ? params.group_size : params.p;
}

// Megatron's rules for v > 1: p <= G <= m, and m mod G is 0 or at least p (a shorter last group
// leaves dependency bubbles; Megatron raises). v = 1 has no group and no rule.
inline Status CheckMegatronInterleaved(const ScheduleParams& params) {
  if (params.v < 1) return Status::InvalidArgument(fmt::format("v = {}: must be >= 1", params.v));
  if (params.v == 1) {
    if (params.group_size == 0) return Status::Ok();
    return Status::InvalidArgument(fmt::format(
        "--group-size = {}: chunk groups exist only with v > 1 (v = 1 here)", params.group_size));
  }
  const int p = params.p, m = params.m, g = MegatronGroupSize(params);
  if (m < p) {
    return Status::InvalidArgument(fmt::format(
        "m = {}: an interleaved schedule with v > 1 needs m >= p = {} (Megatron-LM)", m, p));
  }
  if (g < p || g > m) {
    return Status::InvalidArgument(
        fmt::format("--group-size = {}: microbatches per chunk group must lie in [p, m] = [{}, {}] "
                    "(Megatron-LM microbatch_group_size_per_vp_stage)",
                    g, p, m));
  }
  if (m % g != 0 && m % g < p) {
    return Status::InvalidArgument(fmt::format(
        "m = {} with group size {}: the last group has {} < p = {} microbatches, which leaves "
        "dependency bubbles (Megatron-LM rejects it); use m a multiple of {} or set --group-size",
        m, g, m % g, p, g));
  }
  return Status::Ok();
}

struct ChunkStep {
  int microbatch;
  int chunk;
};

// Returns Megatron's schedule table for m microbatches, v chunks and group size g.
inline std::vector<ChunkStep> MegatronScheduleTable(int m, int v, int g) {
  std::vector<ChunkStep> table;
  table.reserve(static_cast<std::size_t>(m) * v);
  for (int start = 0; start < m; start += g) {
    const int end = start + g >= m ? m : start + g;
    for (int chunk = 0; chunk < v; ++chunk) {
      for (int mb = start; mb < end; ++mb) table.push_back({mb, chunk});
    }
  }
  return table;
}

// Fills every rank of `schedule` (placement already loop(p, v)). `extra_warmup` is 0 for plain
// interleaved 1F1B and 1 for the +1-warmup variants; `overlap` emits each steady pair as one
// overlapped (F;B) cell.
inline void FillMegatronInterleaved(const ScheduleParams& params, int extra_warmup, bool overlap,
                                    Schedule& schedule) {
  const int p = params.p, v = params.v, m = params.m;
  const auto table = MegatronScheduleTable(m, v, MegatronGroupSize(params));
  const int total = m * v;
  for (int r = 0; r < p; ++r) {
    auto forward = [&](int k) { return Action::F(table[k].chunk * p + r, table[k].microbatch); };
    auto backward = [&](int k) {
      return Action::B((v - 1 - table[k].chunk) * p + r, table[k].microbatch);
    };
    const int warmup =
        std::min(2 * (p - 1 - r) + (v - 1) * MegatronGroupSize(params) + extra_warmup, total);
    auto& actions = schedule.ranks[r];
    actions.reserve(2 * static_cast<std::size_t>(total));
    for (int k = 0; k < warmup; ++k) actions.push_back(forward(k));
    for (int k = 0; k < total - warmup; ++k) {
      if (overlap) {
        actions.push_back(Action::Overlap(forward(warmup + k), backward(k)));
      } else {
        actions.push_back(forward(warmup + k));
        actions.push_back(backward(k));
      }
    }
    for (int k = total - warmup; k < total; ++k) actions.push_back(backward(k));
  }
}

// The generator behind interleaved-1f1b, interleaved-1f1b-plus-one and kimi-k2; each of their
// files constructs one with its name, summary and variant.
class MegatronInterleavedGenerator final : public ScheduleGenerator {
 public:
  constexpr MegatronInterleavedGenerator(std::string_view name, std::string_view summary,
                                         int extra_warmup, bool overlap)
      : name_(name), summary_(summary), extra_warmup_(extra_warmup), overlap_(overlap) {}

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  std::string_view constraints() const override {
    return "v >= 1 (default 2); v > 1: p <= G <= m, m % G = 0 or >= p";
  }
  int default_v() const override { return 2; }
  bool uses_group_size() const override { return true; }
  Status Check(const ScheduleParams& params) const override {
    return CheckMegatronInterleaved(params);
  }
  Schedule Generate(const ScheduleParams& params) const override {
    Schedule schedule = MakeEmptySchedule(std::string(name_), params.p, params.v, params.m,
                                          Placement::Loop(params.p, params.v));
    FillMegatronInterleaved(params, extra_warmup_, overlap_, schedule);
    return schedule;
  }

 private:
  std::string_view name_;
  std::string_view summary_;
  int extra_warmup_;
  bool overlap_;
};

}  // namespace pipette::schedules
