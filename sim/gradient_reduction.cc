#include "sim/gradient_reduction.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <simgrid/s4u.hpp>
#include <string>

#include "pipette/common/printable.h"

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

constexpr std::pair<GradReduce, std::string_view> kNames[] = {
    {GradReduce::kAnalytic, "analytic"}, {GradReduce::kRing, "ring"}, {GradReduce::kTree, "tree"}};

// The stage whose weight gradients the compute action `a` produces, or -1.
int GradientStage(const Action& a) {
  if (a.kind == ActionKind::kWeightBackward || a.kind == ActionKind::kFullBackward) return a.stage;
  if (a.kind == ActionKind::kOverlapped && a.backward_half().kind == ActionKind::kFullBackward) {
    return a.backward_half().stage;
  }
  return -1;
}

}  // namespace

std::string_view GradReduceName(GradReduce mode) {
  for (const auto& [m, name] : kNames) {
    if (m == mode) return name;
  }
  return "analytic";
}

Result<GradReduce> ParseGradReduce(std::string_view text, std::string_view key) {
  for (const auto& [m, name] : kNames) {
    if (name == text) return m;
  }
  return Status::InvalidArgument(
      fmt::format("{} = {}: must be analytic, ring or tree", key, Printable(std::string(text))));
}

std::int64_t DefaultBucketParams(int dp) {
  return std::max<std::int64_t>(40'000'000, std::int64_t{1'000'000} * dp);
}

std::vector<RankBuckets> PlanGradientBuckets(const Program& program,
                                             const std::vector<double>& stage_bytes,
                                             double bucket_bytes,
                                             const std::vector<double>& expert_bytes) {
  std::vector<RankBuckets> ranks(program.p);
  for (int r = 0; r < program.p; ++r) {
    // The last instruction producing each stage's weight gradients, in program order.
    const std::vector<Instruction>& instructions = program.ranks[r].instructions;
    std::vector<std::pair<std::size_t, int>> last;  // (instruction index, stage)
    for (std::size_t k = 0; k < instructions.size(); ++k) {
      const int stage = GradientStage(instructions[k].action);
      if (stage < 0) continue;
      const auto it = std::find_if(last.begin(), last.end(),
                                   [&](const auto& entry) { return entry.second == stage; });
      if (it == last.end()) {
        last.emplace_back(k, stage);
      } else {
        it->first = k;
      }
    }
    std::sort(last.begin(), last.end());
    RankBuckets& rank = ranks[r];
    auto fill = [&](int stage, double left, bool experts) {
      while (left > 0) {
        const double bytes = std::min(left, bucket_bytes);
        rank.buckets.push_back({stage, bytes, experts});
        left -= bytes;
      }
    };
    for (const auto& [index, stage] : last) {
      const double experts = expert_bytes.empty() ? 0.0 : expert_bytes[stage];
      fill(stage, stage_bytes[stage] - experts, false);
      fill(stage, experts, true);
      rank.completes.emplace_back(instructions[index].action,
                                  static_cast<int>(rank.buckets.size()));
    }
  }
  return ranks;
}

std::int64_t GradientReduction::MessagesPerReplicaStep(int replicas) const {
  const CollectiveAlgorithm algorithm =
      mode == GradReduce::kTree ? CollectiveAlgorithm::kTree : CollectiveAlgorithm::kRing;
  std::int64_t messages = 0;
  for (const RankBuckets& rank : ranks) {
    for (const GradientBucket& bucket : rank.buckets) {
      messages += MessagesPerMember(algorithm, bucket.experts ? replicas / ep : replicas);
    }
  }
  return messages;
}

RankReducer::RankReducer(const RankBuckets& plan, GroupMember dense, GroupMember experts, int rank,
                         bool overlap, std::vector<AllReduceEvent>* log)
    : plan_(plan),
      dense_(dense),
      experts_(experts),
      rank_(rank),
      overlap_(overlap),
      log_(log),
      mutex_(sg4::Mutex::create()),
      changed_(sg4::ConditionVariable::create()) {}

void RankReducer::Run(int step, const GradientBucket& bucket) {
  const double start = sg4::Engine::get_clock();
  const GroupMember& in = bucket.experts ? experts_ : dense_;
  in.group->AllReduce(in.member, bucket.bytes);
  log_->push_back({rank_, step, start, sg4::Engine::get_clock(),
                   static_cast<std::int64_t>(std::llround(bucket.bytes))});
}

void RankReducer::Release(std::int64_t total) {
  std::unique_lock lock(*mutex_);
  if (total <= released_) return;
  released_ = total;
  changed_->notify_all();
}

void RankReducer::Computed(const Action& action, int step) {
  if (!overlap_) return;
  for (const auto& [completes, ready] : plan_.completes) {
    if (completes == action) {
      Release(static_cast<std::int64_t>(step) * std::ssize(plan_.buckets) + ready);
      return;
    }
  }
}

void RankReducer::Finish(int step) {
  const auto buckets = std::ssize(plan_.buckets);
  if (!overlap_) {
    for (const GradientBucket& bucket : plan_.buckets) Run(step, bucket);
    return;
  }
  const std::int64_t all = (static_cast<std::int64_t>(step) + 1) * buckets;
  Release(all);
  std::unique_lock lock(*mutex_);
  while (done_ < all) changed_->wait(lock);
}

void RankReducer::Serve(int steps) {
  const auto buckets = std::ssize(plan_.buckets);
  for (std::int64_t k = 0; k < steps * buckets; ++k) {
    {
      std::unique_lock lock(*mutex_);
      while (released_ <= k) changed_->wait(lock);
    }
    Run(static_cast<int>(k / buckets), plan_.buckets[k % buckets]);
    std::unique_lock lock(*mutex_);
    done_ = k + 1;
    changed_->notify_all();
  }
}

}  // namespace pipette
