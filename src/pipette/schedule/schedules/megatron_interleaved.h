// Megatron-LM's interleaved 1F1B order (forward_backward_pipelining_with_interleaving,
// get_schedule_table, get_pp_rank_microbatches), shared by interleaved-1f1b,
// interleaved-1f1b-plus-one and kimi-k2.
//
// PyTorch's ScheduleInterleaved1F1B is the same order with G = m / rounds, rounds = max(1, m/p)
// (integer division; it raises when rounds does not divide m), and without Megatron's rule
// p <= G: for m < p it runs one round of G = m. interleaved-1f1b uses PyTorch's G when no
// --group-size is given (the two defaults agree whenever p divides m, the only m that Megatron's
// default G = p accepts) and Megatron's order and rules for an explicit G; the +1 variants have no
// PyTorch counterpart and keep Megatron's default G = p.
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
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/schedule/action.h"
#include "pipette/schedule/schedule.h"
#include "pipette/schedule/schedule_generator.h"

namespace pipette::schedules {

// PyTorch ScheduleInterleaved1F1B's number of rounds, max(1, floor(m/p)).
inline int PytorchRounds(const ScheduleParams& params) { return std::max(1, params.m / params.p); }

// The group size actually used: params.group_size, else PyTorch's m / rounds when
// `pytorch_default`, else Megatron's default p.
inline int MegatronGroupSize(const ScheduleParams& params, bool pytorch_default = false) {
  if (params.group_size > 0) return params.group_size;
  return pytorch_default ? params.m / PytorchRounds(params) : params.p;
}

// A --group-size that Megatron-LM accepts for these p and m (the smallest; G = m always works once
// m >= p), for error messages; 0 when m < p.
inline int SmallestMegatronGroupSize(int p, int m) {
  for (int g = p; g <= m; ++g) {
    if (m % g == 0 || m % g >= p) return g;
  }
  return 0;
}

// What to say after a Megatron rule refuses a size: whether PyTorch's order (no --group-size)
// would run it, or which G would.
inline std::string MegatronAlternative(const ScheduleParams& params, bool pytorch_default) {
  const int rounds = PytorchRounds(params);
  if (pytorch_default && params.m % rounds == 0) {
    return fmt::format(
        "; without --group-size, PyTorch's order (G = m / max(1, floor(m/p)) = {}) "
        "accepts it",
        params.m / rounds);
  }
  const int g = SmallestMegatronGroupSize(params.p, params.m);
  if (g == 0) return "";
  return fmt::format("; --group-size {} is accepted", g);
}

// Megatron's rules for v > 1: p <= G <= m, and m mod G is 0 or at least p (a shorter last group
// leaves dependency bubbles; Megatron raises). v = 1 has no group and no rule.
inline Status CheckMegatronGroups(const ScheduleParams& params, bool pytorch_default) {
  const int p = params.p, m = params.m, g = MegatronGroupSize(params);
  const std::string alternative = MegatronAlternative(params, pytorch_default);
  if (m < p) {
    return Status::InvalidArgument(fmt::format(
        "m = {}: Megatron-LM's interleaved schedule (v > 1) needs m >= p = {}{}", m, p,
        pytorch_default ? "; without --group-size, PyTorch's order runs it as one round of m"
                        : ""));
  }
  if (g < p || g > m) {
    return Status::InvalidArgument(
        fmt::format("--group-size = {}: microbatches per chunk group must lie in [p, m] = [{}, {}] "
                    "(Megatron-LM microbatch_group_size_per_vp_stage){}",
                    g, p, m, alternative));
  }
  if (m % g != 0 && m % g < p) {
    return Status::InvalidArgument(
        fmt::format("m = {} with group size {}: the last group has {} < p = {} microbatches, which "
                    "leaves dependency bubbles (Megatron-LM rejects it){}",
                    m, g, m % g, p, alternative));
  }
  return Status::Ok();
}

// PyTorch's rule (no --group-size, v > 1): rounds = max(1, floor(m/p)) must divide m.
inline Status CheckPytorchRounds(const ScheduleParams& params) {
  const int rounds = PytorchRounds(params);
  if (params.m % rounds == 0) return Status::Ok();
  const int g = SmallestMegatronGroupSize(params.p, params.m);
  return Status::InvalidArgument(fmt::format(
      "m = {}: PyTorch's ScheduleInterleaved1F1B needs m to be a multiple of its rounds "
      "max(1, floor(m/p)) = {} (it raises); Megatron-LM's order accepts it with --group-size {} "
      "(any G in [p, m] = [{}, {}] with m % G = 0 or >= p)",
      params.m, rounds, g, params.p, params.m));
}

// The checks of interleaved-1f1b (`pytorch_default`) and of the Megatron-only variants.
inline Status CheckMegatronInterleaved(const ScheduleParams& params, bool pytorch_default = false) {
  if (params.v < 1) return Status::InvalidArgument(fmt::format("v = {}: must be >= 1", params.v));
  if (params.v == 1) {
    if (params.group_size == 0) return Status::Ok();
    return Status::InvalidArgument(fmt::format(
        "--group-size = {}: chunk groups exist only with v > 1 (v = 1 here)", params.group_size));
  }
  if (pytorch_default && params.group_size == 0) return CheckPytorchRounds(params);
  return CheckMegatronGroups(params, pytorch_default);
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

// Fills every rank of `schedule` (placement already loop(p, v)) with group size `group_size`
// (MegatronGroupSize). `extra_warmup` is 0 for plain
// interleaved 1F1B and 1 for the +1-warmup variants; `overlap` emits each steady pair as one
// overlapped (F;B) cell.
inline void FillMegatronInterleaved(const ScheduleParams& params, int group_size, int extra_warmup,
                                    bool overlap, Schedule& schedule) {
  const int p = params.p, v = params.v, m = params.m;
  const auto table = MegatronScheduleTable(m, v, group_size);
  const int total = m * v;
  for (int r = 0; r < p; ++r) {
    auto forward = [&](int k) { return Action::F(table[k].chunk * p + r, table[k].microbatch); };
    auto backward = [&](int k) {
      return Action::B((v - 1 - table[k].chunk) * p + r, table[k].microbatch);
    };
    const int warmup = std::min(2 * (p - 1 - r) + (v - 1) * group_size + extra_warmup, total);
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
// files constructs one with its name, summary, constraints and variant. `pytorch_default`: without
// --group-size, G follows PyTorch's rounds rule instead of Megatron's G = p.
class MegatronInterleavedGenerator final : public ScheduleGenerator {
 public:
  constexpr MegatronInterleavedGenerator(std::string_view name, std::string_view summary,
                                         std::string_view constraints, int extra_warmup,
                                         bool overlap, bool pytorch_default)
      : name_(name),
        summary_(summary),
        constraints_(constraints),
        extra_warmup_(extra_warmup),
        overlap_(overlap),
        pytorch_default_(pytorch_default) {}

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  std::string_view constraints() const override { return constraints_; }
  int default_v() const override { return 2; }
  bool uses_group_size() const override { return true; }
  Status Check(const ScheduleParams& params) const override {
    return CheckMegatronInterleaved(params, pytorch_default_);
  }
  Schedule Generate(const ScheduleParams& params) const override {
    Schedule schedule = MakeEmptySchedule(std::string(name_), params.p, params.v, params.m,
                                          Placement::Loop(params.p, params.v));
    FillMegatronInterleaved(params, MegatronGroupSize(params, pytorch_default_), extra_warmup_,
                            overlap_, schedule);
    return schedule;
  }

 private:
  std::string_view name_;
  std::string_view summary_;
  std::string_view constraints_;
  int extra_warmup_;
  bool overlap_;
  bool pytorch_default_;
};

// The constraints of the Megatron-only variants (default G = p).
inline constexpr std::string_view kMegatronInterleavedConstraints =
    "v >= 1 (default 2); v > 1: p <= G <= m, m % G = 0 or >= p (G = --group-size, default p)";

}  // namespace pipette::schedules
