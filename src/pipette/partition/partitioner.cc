#include "pipette/partition/partitioner.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <utility>

#include "pipette/common/duration_limit.h"

namespace pipette {
namespace {

// Checks the F, I and W times of `what` ("layer 'x'", "stage 3") against kMaxDurationSeconds;
// `cause` names the inputs behind them.
Status CheckPassTimes(double f, double i, double w, const std::string& cause,
                      const std::string& what) {
  PIPETTE_RETURN_IF_ERROR(CheckDuration(f, cause, what + " forward"));
  PIPETTE_RETURN_IF_ERROR(CheckDuration(i, cause, what + " input-gradient backward"));
  return CheckDuration(w, cause, what + " weight-gradient backward");
}

// One layer as the partitioner sees it.
struct Item {
  LayerId id;
  LayerTimes times;
  double time;  // f + i + w + the all-to-all of F and I
  double params_per_gpu;
  double expert_params_per_gpu;
  double alltoall_phase;  // seconds of one all-to-all phase (MoE layers; 0 otherwise)
  double activation;      // bytes per in-flight chunk, per GPU
  double wgrad_input;     // bytes per chunk waiting for W, per GPU
};

// A run of the topological order that belongs to one region: [begin, end).
struct RegionRun {
  std::string name;
  std::size_t begin;
  std::size_t end;
  std::size_t size() const { return end - begin; }
};

class Partitioner {
 public:
  Partitioner(const ModelGraph& model, const Placement& placement, const CostModel& cost,
              const PartitionRequest& request)
      : model_(model), placement_(placement), cost_(cost), request_(request) {}

  Result<StagePlan> Run() {
    PIPETTE_ASSIGN_OR_RETURN(order_, model_.TopologicalOrder());
    PIPETTE_RETURN_IF_ERROR(Prepare());
    const int stages = placement_.num_stages();
    if (static_cast<int>(items_.size()) < stages) {
      return Status::InvalidArgument(fmt::format(
          "model '{}' has {} layers, fewer than the {} stages (p*v = {}*{}): every stage needs a "
          "layer",
          model_.name, items_.size(), stages, placement_.num_ranks(),
          stages / placement_.num_ranks()));
    }
    if (static_cast<int>(runs_.size()) > stages) {
      return Status::InvalidArgument(fmt::format(
          "model '{}' has {} regions but only {} stages: every region needs its own stage",
          model_.name, runs_.size(), stages));
    }
    std::vector<std::size_t> starts;  // first item of each stage
    if (request_.strategy == PartitionStrategy::kUniform) {
      starts = Uniform();
    } else {
      PIPETTE_ASSIGN_OR_RETURN(starts, Balanced());
      if (placement_.num_stages() > placement_.num_ranks()) RefineRanks(starts);
    }
    StagePlan plan = Build(starts);
    PIPETTE_RETURN_IF_ERROR(CheckStageTimes(plan));
    if (request_.strategy == PartitionStrategy::kMemory) {
      PIPETTE_RETURN_IF_ERROR(CheckMemory(plan));
    }
    return plan;
  }

 private:
  // Every stage's times, sums of layer times each within the bound, against the bound; the cause
  // is the slowest layer's.
  Status CheckStageTimes(const StagePlan& plan) const {
    for (const StageInfo& stage : plan.stages) {
      if (stage.time() <= kMaxDurationSeconds) continue;
      LayerId slowest = stage.layers.front();
      double longest = -1;
      for (const Item& item : items_) {
        if (item.time > longest &&
            std::find(stage.layers.begin(), stage.layers.end(), item.id) != stage.layers.end()) {
          longest = item.time;
          slowest = item.id;
        }
      }
      PIPETTE_RETURN_IF_ERROR(CheckPassTimes(stage.time_f, stage.time_i, stage.time_w,
                                             cost_.CauseOf(model_.layer(slowest)),
                                             fmt::format("stage {}", stage.index)));
    }
    return Status::Ok();
  }

  Status Prepare() {
    const double tp = std::max(1, request_.tp);
    for (LayerId id : order_) {
      const Layer& layer = model_.layer(id);
      const double shards = layer.tp_sharded ? tp : 1;
      const LayerTimes t = cost_.Times(layer);
      // An absurd time (an efficiency of 1e-320) is refused before it reaches the search.
      PIPETTE_RETURN_IF_ERROR(CheckPassTimes(t.f, t.i, t.w, cost_.CauseOf(layer),
                                             fmt::format("layer '{}'", layer.name)));
      const double kept =
          request_.recompute ? layer.activation_bytes_recompute : layer.activation_bytes;
      const double experts = layer.expert_params / shards / std::max(1, request_.ep);
      const double phase = layer.alltoall_bytes > 0
                               ? request_.alltoall_latency + layer.alltoall_bytes / shards *
                                                                 request_.alltoall_seconds_per_byte
                               : 0.0;
      items_.push_back({id, t, t.f + t.i + t.w + 4 * phase,
                        (layer.params - layer.expert_params) / shards + experts, experts, phase,
                        kept / shards, layer.wgrad_input_bytes / shards});
      if (runs_.empty() || runs_.back().name != layer.region) {
        for (const RegionRun& run : runs_) {
          if (run.name == layer.region) {
            return Status::InvalidArgument(fmt::format(
                "model '{}': region '{}' is not contiguous in topological order (layer '{}' "
                "follows region '{}'): a region must form one run of stages",
                model_.name, layer.region, layer.name, runs_.back().name));
          }
        }
        runs_.push_back({layer.region, items_.size() - 1, items_.size()});
      } else {
        runs_.back().end = items_.size();
      }
    }
    prefix_.assign(items_.size() + 1, 0.0);
    for (std::size_t k = 0; k < items_.size(); ++k) prefix_[k + 1] = prefix_[k] + items_[k].time;
    return Status::Ok();
  }

  double Time(std::size_t b, std::size_t e) const { return prefix_[e] - prefix_[b]; }

  // Memory of the rank holding `stage` if it held only [b, e); 0 when memory does not matter.
  // With v stages per rank each stage gets 1/v of the device and of the rank's peak counts.
  bool Fits(std::size_t b, std::size_t e, int stage) const {
    if (request_.strategy != PartitionStrategy::kMemory) return true;
    const int rank = placement_.rank_of(stage);
    const double share = static_cast<double>(placement_.num_stages()) / placement_.num_ranks();
    double params = 0, experts = 0, activation = 0, wgrad = 0;
    for (std::size_t k = b; k < e; ++k) {
      params += items_[k].params_per_gpu;
      experts += items_[k].expert_params_per_gpu;
      activation += items_[k].activation;
      wgrad += items_[k].wgrad_input;
    }
    const double chunks = std::ceil(request_.peak_chunks[rank] / share);
    const double pending = std::ceil(request_.peak_pending_w[rank] / share);
    const double bytes =
        request_.memory->Static(params, experts).total() + chunks * activation + pending * wgrad;
    return bytes <= request_.device_memory / share;
  }

  // Greedy cut of run [b, e) into as few stages as possible with time <= limit (and memory), the
  // first being global stage `first_stage`. Returns the stage starts, or an empty vector when a
  // single layer does not fit or the stages run out.
  std::vector<std::size_t> Greedy(std::size_t b, std::size_t e, double limit,
                                  int first_stage) const {
    std::vector<std::size_t> starts;
    std::size_t begin = b;
    while (begin < e) {
      const int stage = first_stage + static_cast<int>(starts.size());
      if (stage >= placement_.num_stages()) return {};  // needs more stages than there are
      std::size_t end = begin;
      while (end < e && Time(begin, end + 1) <= limit && Fits(begin, end + 1, stage)) ++end;
      if (end == begin) return {};
      starts.push_back(begin);
      begin = end;
    }
    return starts;
  }

  // Splits stages (the one with most layers, latest first) until there are `count`; splitting
  // never raises a stage's time.
  void SplitTo(std::vector<std::size_t>& starts, std::size_t end, int count) const {
    while (static_cast<int>(starts.size()) < count) {
      std::size_t best = starts.size();
      std::size_t best_size = 1;
      for (std::size_t s = 0; s < starts.size(); ++s) {
        const std::size_t stop = s + 1 < starts.size() ? starts[s + 1] : end;
        if (stop - starts[s] >= best_size) {
          best = s;
          best_size = stop - starts[s];
        }
      }
      if (best == starts.size() || best_size < 2) return;
      const std::size_t stop = best + 1 < starts.size() ? starts[best + 1] : end;
      // Cut the stage where its halves' times are closest.
      std::size_t cut = starts[best] + 1;
      for (std::size_t k = starts[best] + 1; k < stop; ++k) {
        if (std::abs(Time(starts[best], k) - Time(k, stop)) <
            std::abs(Time(starts[best], cut) - Time(cut, stop))) {
          cut = k;
        }
      }
      starts.insert(starts.begin() + best + 1, cut);
    }
  }

  std::vector<std::size_t> Uniform() const {
    // Stages per region proportional to its layers (at least one), largest remainders first.
    const int stages = placement_.num_stages();
    std::vector<int> count(runs_.size(), 1);
    int left = stages - static_cast<int>(runs_.size());
    const double layers = static_cast<double>(items_.size());
    std::vector<double> want(runs_.size());
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      want[r] = stages * runs_[r].size() / layers;
      const int extra = std::min<int>(left, std::max(0, static_cast<int>(std::floor(want[r])) - 1));
      count[r] += extra;
      left -= extra;
    }
    while (left > 0) {
      std::size_t best = 0;
      double best_gap = -1e300;
      for (std::size_t r = 0; r < runs_.size(); ++r) {
        if (count[r] >= static_cast<int>(runs_[r].size())) continue;
        if (want[r] - count[r] > best_gap) {
          best = r;
          best_gap = want[r] - count[r];
        }
      }
      ++count[best];
      --left;
    }
    std::vector<std::size_t> starts;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      const std::size_t n = runs_[r].size(), k = count[r];
      for (std::size_t s = 0; s < k; ++s) starts.push_back(runs_[r].begin + s * n / k);
    }
    return starts;
  }

  // Fewest stages each region needs so that no stage exceeds `limit`; nullopt-like empty result
  // when some layer alone exceeds it.
  bool Feasible(double limit, std::vector<std::vector<std::size_t>>* cuts) const {
    int used = 0;
    for (const RegionRun& run : runs_) {
      std::vector<std::size_t> starts = Greedy(run.begin, run.end, limit, used);
      if (starts.empty()) return false;
      used += static_cast<int>(starts.size());
      if (used > placement_.num_stages()) return false;
      if (cuts) cuts->push_back(std::move(starts));
    }
    return true;
  }

  Result<std::vector<std::size_t>> Balanced() const {
    double lo = 0, hi = prefix_.back();
    for (const Item& item : items_) lo = std::max(lo, item.time);
    if (!Feasible(hi, nullptr)) {
      // Only memory can make the whole-model bound infeasible.
      return Status::InvalidArgument(fmt::format(
          "model '{}' does not fit {} stages of {:.3g} GB each: no partition keeps every rank "
          "within device memory (try more stages, --tp, --zero or --recompute)",
          model_.name, placement_.num_stages(), request_.device_memory / 1e9));
    }
    if (Feasible(lo, nullptr)) hi = lo;
    for (int iteration = 0; iteration < 200 && hi - lo > 1e-15 * hi; ++iteration) {
      const double mid = lo + (hi - lo) / 2;
      (Feasible(mid, nullptr) ? hi : lo) = mid;
    }
    std::vector<std::vector<std::size_t>> cuts;
    Feasible(hi, &cuts);
    // Spare stages go, one at a time, to the region whose slowest stage is slowest.
    int spare = placement_.num_stages();
    for (const auto& c : cuts) spare -= static_cast<int>(c.size());
    while (spare > 0) {
      std::size_t best = runs_.size();
      double slowest = -1;
      for (std::size_t r = 0; r < runs_.size(); ++r) {
        if (cuts[r].size() >= runs_[r].size()) continue;
        for (std::size_t s = 0; s < cuts[r].size(); ++s) {
          const std::size_t stop = s + 1 < cuts[r].size() ? cuts[r][s + 1] : runs_[r].end;
          if (Time(cuts[r][s], stop) > slowest) {
            slowest = Time(cuts[r][s], stop);
            best = r;
          }
        }
      }
      SplitTo(cuts[best], runs_[best].end, static_cast<int>(cuts[best].size()) + 1);
      --spare;
    }
    std::vector<std::size_t> starts;
    for (const auto& c : cuts) starts.insert(starts.end(), c.begin(), c.end());
    return starts;
  }

  bool SameRegion(std::size_t a, std::size_t b) const {
    return model_.layer(items_[a].id).region == model_.layer(items_[b].id).region;
  }

  // A change of one or two stage boundaries (b2 == 0: one).
  struct Move {
    std::size_t b1 = 0, b2 = 0;
    long d1 = 0, d2 = 0;
  };

  // The rank objective: the largest rank time, then the sum of squared rank times.
  struct Objective {
    double max = 0;
    double squares = 0;
  };

  // Where the local search stands: the time of every rank, the slowest and the largest few.
  struct RankLoads {
    std::vector<double> load;  // per rank
    int slowest = 0;
    Objective now;
    std::vector<int> top;  // the (up to) 6 ranks with the largest loads, largest first
  };

  // The first item after stage `s` of `cut`.
  std::size_t StopOf(const std::vector<std::size_t>& cut, std::size_t s) const {
    return s + 1 < cut.size() ? cut[s + 1] : items_.size();
  }

  // Adds `sign` times each stage's time of `starts` to its rank's load.
  void AddStageTimes(const std::vector<std::size_t>& starts, double sign,
                     std::vector<double>& load) const {
    for (std::size_t s = 0; s < starts.size(); ++s) {
      load[placement_.rank_of(static_cast<int>(s))] += sign * Time(starts[s], StopOf(starts, s));
    }
  }

  // Fills in the slowest rank, the objective and the top ranks of `loads.load`.
  static void Rank(RankLoads& loads) {
    const std::vector<double>& load = loads.load;
    loads.slowest = static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
    loads.now = {load[loads.slowest], 0};
    for (double x : load) loads.now.squares += x * x;
    // The largest loads with their ranks, to find the max over unaffected ranks quickly.
    std::vector<int>& top = loads.top;
    top.resize(load.size());
    std::iota(top.begin(), top.end(), 0);
    std::partial_sort(top.begin(), top.begin() + std::min<std::size_t>(6, top.size()), top.end(),
                      [&](int x, int y) { return load[x] > load[y]; });
    top.resize(std::min<std::size_t>(6, top.size()));
  }

  // Returns the objective after `move`, which turns `starts` into `candidate`, scored from the
  // ranks of the (at most four) stages it changes; nullopt when it empties a stage or a stage no
  // longer fits.
  std::optional<Objective> Score(const std::vector<std::size_t>& starts,
                                 const std::vector<std::size_t>& candidate, const Move& move,
                                 const RankLoads& loads) const {
    const std::size_t b1 = move.b1, b2 = move.b2;
    std::size_t affected[4] = {b1 - 1, b1, b2 ? b2 - 1 : b1 - 1, b2 ? b2 : b1};
    std::sort(affected, affected + 4);
    const std::size_t* last = std::unique(affected, affected + 4);
    std::vector<std::pair<int, double>> delta;  // rank, load change
    for (const std::size_t* it = affected; it != last; ++it) {
      const std::size_t s = *it;
      if (s >= starts.size()) continue;
      const std::size_t b = candidate[s], e = StopOf(candidate, s);
      if (b >= e) return std::nullopt;  // an empty stage
      if (!Fits(b, e, static_cast<int>(s))) return std::nullopt;
      const double change = Time(b, e) - Time(starts[s], StopOf(starts, s));
      const int r = placement_.rank_of(static_cast<int>(s));
      auto found_rank =
          std::find_if(delta.begin(), delta.end(), [&](const auto& d) { return d.first == r; });
      if (found_rank == delta.end()) {
        delta.push_back({r, change});
      } else {
        found_rank->second += change;
      }
    }
    const std::vector<double>& load = loads.load;
    Objective after{0, loads.now.squares};
    for (const auto& [r, change] : delta) {
      const double updated = load[r] + change;
      after.squares += updated * updated - load[r] * load[r];
      after.max = std::max(after.max, updated);
    }
    auto untouched = [&](int r) {
      return std::none_of(delta.begin(), delta.end(), [&](const auto& d) { return d.first == r; });
    };
    bool seen = false;
    for (int r : loads.top) {  // the largest load among ranks the move leaves alone
      if (untouched(r)) {
        after.max = std::max(after.max, load[r]);
        seen = true;
        break;
      }
    }
    if (!seen) {  // every top rank was touched: scan the rest
      for (std::size_t r = 0; r < load.size(); ++r) {
        if (untouched(static_cast<int>(r))) after.max = std::max(after.max, load[r]);
      }
    }
    return after;
  }

  // Returns the move of a boundary of the slowest rank's stages that lowers the objective the
  // most (see RefineRanks), nullopt when none lowers it.
  std::optional<Move> BestMove(const std::vector<std::size_t>& starts,
                               const RankLoads& loads) const {
    const std::size_t stages = starts.size();
    const long n = static_cast<long>(items_.size());
    const long reach = std::min(n, 64L);
    constexpr long kPairReach = 3;
    Objective best = loads.now;
    std::optional<Move> best_move;
    std::vector<std::size_t> candidate = starts;
    auto consider = [&](const Move& move) {
      candidate[move.b1] = starts[move.b1] + move.d1;
      if (move.b2) candidate[move.b2] = starts[move.b2] + move.d2;
      const std::optional<Objective> after = Score(starts, candidate, move, loads);
      const bool better = after && (after->max < best.max - 1e-12 * best.max ||
                                    (after->max <= best.max + 1e-12 * best.max &&
                                     after->squares < best.squares - 1e-12 * best.squares));
      if (better) {
        best = *after;
        best_move = move;
      }
      candidate[move.b1] = starts[move.b1];
      if (move.b2) candidate[move.b2] = starts[move.b2];
    };
    auto movable = [&](std::size_t boundary, long delta) {
      const long moved = static_cast<long>(starts[boundary]) + delta;
      return !region_cut_[boundary] && moved > 0 && moved < n;
    };
    std::vector<std::size_t> own;
    for (std::size_t s = 0; s < stages; ++s) {
      if (placement_.rank_of(static_cast<int>(s)) != loads.slowest) continue;
      if (s > 0) own.push_back(s);
      if (s + 1 < stages) own.push_back(s + 1);
    }
    for (std::size_t b1 : own) {
      for (long d1 = -reach; d1 <= reach; ++d1) {
        if (d1 != 0 && movable(b1, d1)) consider(Move{b1, 0, d1, 0});
      }
      for (std::size_t b2 = 1; b2 < stages; ++b2) {
        if (b2 == b1) continue;
        for (long d1 = -kPairReach; d1 <= kPairReach; ++d1) {
          if (d1 == 0 || !movable(b1, d1)) continue;
          for (long d2 = -kPairReach; d2 <= kPairReach; ++d2) {
            if (d2 != 0 && movable(b2, d2)) consider(Move{b1, b2, d1, d2});
          }
        }
      }
    }
    return best_move;
  }

  // Local search on the rank objective (max rank time, then the sum of squared rank times; each
  // accepted move lowers it strictly, so the search ends). Every move touches a boundary of the
  // slowest rank's stages:
  //  - shift that boundary by up to `reach` layers;
  //  - shift it and any other boundary by up to 3 layers each, independently (under the V layout
  //    rank r's two stages are far apart, and moving load between ranks needs both ends of the
  //    outer stages to move at once).
  // A move changes at most four stages, so candidates are scored from the affected ranks only.
  void RefineRanks(std::vector<std::size_t>& starts) {
    const std::size_t stages = starts.size();
    region_cut_.assign(stages, false);
    for (std::size_t s = 1; s < stages; ++s) region_cut_[s] = !SameRegion(starts[s] - 1, starts[s]);
    RankLoads loads;
    loads.load.assign(placement_.num_ranks(), 0.0);
    AddStageTimes(starts, 1, loads.load);
    for (std::size_t iteration = 0; iteration < 16 * stages; ++iteration) {
      Rank(loads);
      const std::optional<Move> move = BestMove(starts, loads);
      if (!move) break;
      AddStageTimes(starts, -1, loads.load);  // apply: recompute the loads it changes
      starts[move->b1] += move->d1;
      if (move->b2) starts[move->b2] += move->d2;
      AddStageTimes(starts, 1, loads.load);
    }
  }

  StagePlan Build(const std::vector<std::size_t>& starts) const {
    StagePlan plan;
    plan.model = model_.name;
    plan.total_params = model_.TotalParams();
    plan.placement = placement_;
    std::vector<int> stage_of(model_.num_layers(), -1);
    for (std::size_t s = 0; s < starts.size(); ++s) {
      const std::size_t stop = s + 1 < starts.size() ? starts[s + 1] : items_.size();
      StageInfo info;
      info.index = static_cast<int>(s);
      info.rank = placement_.rank_of(info.index);
      info.region = model_.layer(items_[starts[s]].id).region;
      for (std::size_t k = starts[s]; k < stop; ++k) {
        const Item& item = items_[k];
        const Layer& layer = model_.layer(item.id);
        info.layers.push_back(item.id);
        stage_of[item.id] = info.index;
        info.params += layer.params;
        info.params_per_gpu += item.params_per_gpu;
        info.expert_params_per_gpu += item.expert_params_per_gpu;
        if (layer.alltoall_bytes > 0) {
          ++info.moe_layers;
          info.alltoall_bytes += static_cast<std::int64_t>(
              layer.alltoall_bytes / (layer.tp_sharded ? std::max(1, request_.tp) : 1));
          info.time_alltoall_f += 2 * item.alltoall_phase;
          info.time_alltoall_b += 2 * item.alltoall_phase;
        }
        info.fwd_flops += layer.fwd_flops;
        info.igrad_flops += layer.igrad_flops;
        info.wgrad_flops += layer.wgrad_flops;
        info.time_f += item.times.f;
        info.time_i += item.times.i;
        info.time_w += item.times.w;
        info.activation_bytes += static_cast<std::int64_t>(item.activation);
        info.wgrad_input_bytes += static_cast<std::int64_t>(item.wgrad_input);
      }
      plan.stages.push_back(std::move(info));
    }
    for (auto [e, end] = boost::edges(model_.graph); e != end; ++e) {
      const int from = stage_of[boost::source(*e, model_.graph)];
      const int to = stage_of[boost::target(*e, model_.graph)];
      if (to > from) plan.stages[from].boundary_bytes += model_.graph[*e].bytes;
    }
    return plan;
  }

  Status CheckMemory(const StagePlan& plan) const {
    const std::vector<MemoryBreakdown> memory = RankMemory(plan, request_);
    for (int r = 0; r < placement_.num_ranks(); ++r) {
      if (memory[r].total() > request_.device_memory) {
        return Status::InvalidArgument(fmt::format(
            "model '{}': rank {} needs {:.3g} GB (weights {:.3g}, gradients {:.3g}, optimizer "
            "{:.3g}, activations {:.3g}) but the device has {:.3g} GB (try more stages, --tp, "
            "--zero or --recompute)",
            model_.name, r, memory[r].total() / 1e9, memory[r].weights / 1e9,
            memory[r].gradients / 1e9, memory[r].optimizer / 1e9, memory[r].activations / 1e9,
            request_.device_memory / 1e9));
      }
    }
    return Status::Ok();
  }

  const ModelGraph& model_;
  const Placement& placement_;
  const CostModel& cost_;
  const PartitionRequest& request_;
  std::vector<LayerId> order_;
  std::vector<Item> items_;
  std::vector<RegionRun> runs_;
  std::vector<double> prefix_;
  std::vector<bool> region_cut_;  // per stage: it starts a new region (RefineRanks keeps those)
};

}  // namespace

Result<PartitionStrategy> ParsePartitionStrategy(std::string_view text) {
  for (auto s :
       {PartitionStrategy::kUniform, PartitionStrategy::kBalanced, PartitionStrategy::kMemory}) {
    if (text == PartitionStrategyName(s)) return s;
  }
  return Status::InvalidArgument(fmt::format(
      "--strategy = '{}': unknown strategy (expected uniform, balanced or memory)", text));
}

std::string_view PartitionStrategyName(PartitionStrategy strategy) {
  switch (strategy) {
    case PartitionStrategy::kUniform:
      return "uniform";
    case PartitionStrategy::kBalanced:
      return "balanced";
    case PartitionStrategy::kMemory:
      return "memory";
  }
  return "?";
}

Result<StagePlan> Partition(const ModelGraph& model, const Placement& placement,
                            const CostModel& cost, const PartitionRequest& request) {
  if (request.strategy == PartitionStrategy::kMemory) {
    const std::size_t p = placement.num_ranks();
    if (request.memory == nullptr || request.device_memory <= 0 ||
        request.peak_chunks.size() != p || request.peak_pending_w.size() != p) {
      return Status::InvalidArgument(
          "--strategy = memory needs a memory model, the device memory and the schedule's peak "
          "in-flight chunks per rank");
    }
  }
  Partitioner partitioner(model, placement, cost, request);
  return partitioner.Run();
}

std::vector<MemoryBreakdown> RankMemory(const StagePlan& plan, const PartitionRequest& request) {
  const int p = plan.placement.num_ranks();
  std::vector<MemoryBreakdown> memory(p);
  std::vector<double> params(p, 0), experts(p, 0), activation(p, 0), wgrad(p, 0);
  for (const StageInfo& s : plan.stages) {
    params[s.rank] += s.params_per_gpu;
    experts[s.rank] += s.expert_params_per_gpu;
    // The peak counts are chunks of any of the rank's stages: charge the largest.
    activation[s.rank] = std::max<double>(activation[s.rank], s.activation_bytes);
    wgrad[s.rank] = std::max<double>(wgrad[s.rank], s.wgrad_input_bytes);
  }
  for (int r = 0; r < p; ++r) {
    memory[r] = request.memory->Static(params[r], experts[r]);
    memory[r].activations =
        request.peak_chunks[r] * activation[r] + request.peak_pending_w[r] * wgrad[r];
  }
  return memory;
}

}  // namespace pipette
