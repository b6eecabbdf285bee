#include "pipette/schedule/evaluate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "pipette/schedule/message.h"
#include "pipette/schedule/schedule.h"

namespace pipette {
namespace {

constexpr double kNotYet = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kNotBlocked = -1;

// The evaluator's hot loop reads, per action, a few dense arrays and nothing through a function
// call: the message slots are computed inline (the optional<Message> of InputMessage() cost a
// store-forwarding stall per action), and when the costs are one set per stage with no all-to-all
// (every schedule study, `--times`, the cost model without uneven lengths) a compute's cost is one
// load from a table indexed by stage and kind. Uneven work (per-microbatch sets) and MoE
// all-to-all read Costs::Of(), the one definition, which the table reproduces bit for bit
// (the same additions in the same order). Timeline recording is a template parameter, so a plain
// evaluation carries none of its branches. A parked rank's next instructions are prefetched (Park).
// tests/schedule/evaluate_golden_test.cc holds the evaluation of every schedule to the bits the
// evaluator before these changes gave.
class Evaluator {
 public:
  Evaluator(const Program& program, const Costs& costs, const EvaluateOptions& options)
      : prog_(program),
        costs_(costs),
        options_(options),
        m_(program.m),
        // Per message slot (message.h): when the message's data is usable on its receiver.
        ready_(static_cast<std::size_t>(Message::NumSlots(program.num_stages(), program.m)),
               kNotYet),
        link_factors_(options.link_slowdowns),
        pc_(program.p, 0),
        clock_(program.p, 0.0),
        blocked_on_(program.p, kNotBlocked),
        in_flight_(program.p, 0),
        pending_w_(program.p, 0) {
    result_.busy.assign(program.p, 0.0);
    result_.peak_activations.assign(program.p, 0);
    result_.peak_pending_w.assign(program.p, 0);
    if (options.record_timeline) {
      pending_recv_.assign(ready_.size(), kNoRecv);
      result_.timeline.resize(program.p);
      for (int r = 0; r < program.p; ++r) {
        result_.timeline[r].resize(program.ranks[r].instructions.size());
      }
    }
    if (costs.microbatch_variant.empty() && costs.alltoall.empty()) {
      table_.resize(4 * costs.stages.size());
      for (std::size_t s = 0; s < costs.stages.size(); ++s) {
        const StageCost& c = costs.stages[s];
        table_[4 * s + kF] = c.f;
        table_[4 * s + kI] = c.i;
        table_[4 * s + kW] = c.w;
        table_[4 * s + kB] = costs.full_backward.empty() ? c.b() : costs.full_backward[s];
      }
    }
  }

  Result<Evaluation> Run() {
    const bool table = !table_.empty();
    if (options_.record_timeline) return table ? RunWith<true, true>() : RunWith<true, false>();
    return table ? RunWith<false, true>() : RunWith<false, false>();
  }

 private:
  // Indices of the kinds in table_ (the ActionKind values of F, I, W, B).
  static constexpr int kF = static_cast<int>(ActionKind::kForward);
  static constexpr int kI = static_cast<int>(ActionKind::kInputBackward);
  static constexpr int kW = static_cast<int>(ActionKind::kWeightBackward);
  static constexpr int kB = static_cast<int>(ActionKind::kFullBackward);
  static_assert(kF == 0 && kI == 1 && kW == 2 && kB == 3);
  // Cache lines of a parked rank's next instructions to prefetch (Park).
  static constexpr std::size_t kPrefetchLines = 8;

  template <bool kTimeline, bool kTable>
  Result<Evaluation> RunWith() {
    for (int r = prog_.p - 1; r >= 0; --r) worklist_.push_back(r);
    while (!worklist_.empty()) {
      const int r = worklist_.back();
      worklist_.pop_back();
      Advance<kTimeline, kTable>(r);
    }
    for (int r = 0; r < prog_.p; ++r) {
      if (pc_[r] < prog_.ranks[r].instructions.size()) return Deadlock();
    }
    double makespan = 0.0, busy = 0.0;
    for (int r = 0; r < prog_.p; ++r) {
      makespan = std::max(makespan, clock_[r]);
      busy += result_.busy[r];
    }
    result_.makespan = makespan;
    result_.bubble_ratio = makespan > 0.0 ? 1.0 - busy / (prog_.p * makespan) : 0.0;
    return std::move(result_);
  }

  // The slot of message (stage, microbatch, gradient) (message.h).
  std::size_t Slot(int stage, int microbatch, bool gradient) const {
    return static_cast<std::size_t>(Message{stage, microbatch, gradient}.slot(m_));
  }

  // The slot of the input of plain compute action a (InputMessage() without its optional, which
  // came back through the stack and stalled every action), or -1 if it has none.
  std::int64_t InputSlot(const Action& a) const {
    if (InputStage(prog_.routes[a.microbatch], a) < 0) return -1;
    return static_cast<std::int64_t>(Slot(a.stage, a.microbatch, a.kind != ActionKind::kForward));
  }

  // The cost of compute action a: Costs::Of, or the same from the table.
  template <bool kTable>
  double CostOf(const Action& a) const {
    if constexpr (kTable) {
      if (a.kind == ActionKind::kOverlapped) {
        const int back = a.back_kind == ActionKind::kInputBackward ? kI : kB;
        return table_[4 * a.stage + kF] + table_[4 * a.back_stage + back];
      }
      return table_[4 * a.stage + static_cast<int>(a.kind)];
    } else {
      return costs_.Of(a);
    }
  }

  // The latency of a message from rank `from` to rank `to`.
  double LatencyTo(int from, int to) const {
    if (link_factors_.empty()) return options_.p2p_latency;
    return options_.p2p_latency * link_factors_(from, to);
  }

  // Makes `slot` usable on rank r at time t and wakes r if it waits for it.
  template <bool kTimeline>
  void Provide(std::size_t slot, int r, double t) {
    ready_[slot] = t;
    if constexpr (kTimeline) {
      if (pending_recv_[slot] != kNoRecv) {
        Interval& recv = result_.timeline[r][pending_recv_[slot]];
        recv.end = std::max(recv.start, t);
      }
    }
    if (blocked_on_[r] == static_cast<std::int64_t>(slot)) {
      blocked_on_[r] = kNotBlocked;
      worklist_.push_back(r);
    }
  }

  // Folds the arrival time of a's input into `start`; returns false (and blocks rank r) if the
  // input has not been produced yet.
  bool InputsReady(int r, const Action& a, double& start) {
    const std::int64_t slot = InputSlot(a);
    if (slot < 0) return true;
    const double t = ready_[slot];
    if (std::isnan(t)) {
      blocked_on_[r] = slot;
      return false;
    }
    start = std::max(start, t);
    return true;
  }

  // Hands a's output to a consumer on the same rank at time `end`.
  void ProduceLocal(int r, const Action& a, double end) {
    const int consumer = ConsumerStage(prog_.routes[a.microbatch], a);
    if (consumer < 0 || prog_.placement.rank_of(consumer) != r) return;
    ready_[Slot(consumer, a.microbatch, a.kind != ActionKind::kForward)] = end;
  }

  void Activations(int r, const Action& a) {
    if (a.kind == ActionKind::kForward) {
      result_.peak_activations[r] = std::max(result_.peak_activations[r], ++in_flight_[r]);
    } else if (IsInputBackward(a.kind)) {
      --in_flight_[r];
    }
    if (a.kind == ActionKind::kInputBackward) {
      result_.peak_pending_w[r] = std::max(result_.peak_pending_w[r], ++pending_w_[r]);
    } else if (a.kind == ActionKind::kWeightBackward) {
      --pending_w_[r];
    }
  }

  // Runs rank r until it ends or waits for an input.
  template <bool kTimeline, bool kTable>
  void Advance(int r) {
    const Instruction* const instructions = prog_.ranks[r].instructions.data();
    const std::size_t size = prog_.ranks[r].instructions.size();
    std::size_t pc = pc_[r];
    double clock = clock_[r];
    double busy = result_.busy[r];
    for (; pc < size; ++pc) {
      const Action& a = instructions[pc].action;
      Interval span{clock, clock};
      switch (a.kind) {
        case ActionKind::kSendForward:
        case ActionKind::kSendBackward: {
          const bool gradient = a.kind == ActionKind::kSendBackward;
          const int stage = gradient ? a.stage - 1 : a.stage + 1;
          const int to = prog_.placement.rank_of(stage);
          Provide<kTimeline>(Slot(stage, a.microbatch, gradient), to, clock + LatencyTo(r, to));
          break;
        }
        case ActionKind::kRecvForward:
        case ActionKind::kRecvBackward: {
          // A posted buffer: never blocks; its end is the arrival time when already known.
          const std::size_t slot = Slot(a.stage, a.microbatch, a.kind == ActionKind::kRecvBackward);
          if constexpr (kTimeline) {
            if (!std::isnan(ready_[slot])) {
              span.end = std::max(clock, ready_[slot]);
            } else {
              pending_recv_[slot] = pc;  // its end is set when the data arrives (Provide)
            }
          }
          break;
        }
        case ActionKind::kOverlapped: {
          double start = clock;
          if (!InputsReady(r, a.forward_half(), start) ||
              !InputsReady(r, a.backward_half(), start)) {
            Park(r, pc, clock, busy);
            return;
          }
          const double cost = CostOf<kTable>(a);
          const double end = start + cost;
          ProduceLocal(r, a.forward_half(), end);
          ProduceLocal(r, a.backward_half(), end);
          Activations(r, a.forward_half());
          Activations(r, a.backward_half());
          busy += cost;  // not end - start, which loses precision late in a long run
          span = {start, end};
          clock = end;
          break;
        }
        default: {
          double start = clock;
          if (!InputsReady(r, a, start)) {
            Park(r, pc, clock, busy);
            return;
          }
          const double cost = CostOf<kTable>(a);
          const double end = start + cost;
          ProduceLocal(r, a, end);
          Activations(r, a);
          busy += cost;
          span = {start, end};
          clock = end;
          break;
        }
      }
      if constexpr (kTimeline) result_.timeline[r][pc] = span;
    }
    Park(r, pc, clock, busy);
  }

  // Stores rank r's position, clock and busy time when Advance() leaves it, and starts loading the
  // instructions it runs on its next turn: ranks take turns a few instructions at a time, too many
  // streams for the hardware prefetcher, and a cache miss per turn was half the evaluation's time
  // at p = 64 (the next kPrefetchLines lines: 16.5 -> 7-8 ms for interleaved-1f1b p64 v4 m1024).
  void Park(int r, std::size_t pc, double clock, double busy) {
    const auto& instructions = prog_.ranks[r].instructions;
    const char* next = reinterpret_cast<const char*>(instructions.data() + pc);
    const std::size_t left = (instructions.size() - pc) * sizeof(Instruction);
    for (std::size_t offset = 64; offset <= 64 * kPrefetchLines && offset < left; offset += 64) {
      __builtin_prefetch(next + offset);
    }
    pc_[r] = pc;
    clock_[r] = clock;
    result_.busy[r] = busy;
  }

  Status Deadlock() const {
    std::string waits;
    for (int r = 0; r < prog_.p; ++r) {
      const auto& instructions = prog_.ranks[r].instructions;
      if (pc_[r] == instructions.size()) continue;
      waits += fmt::format("{}rank {} at instruction {} ({})", waits.empty() ? "" : "; ", r, pc_[r],
                           ToString(instructions[pc_[r]].action));
    }
    return Status::FailedPrecondition("evaluate: deadlock: " + waits);
  }

  const Program& prog_;
  const Costs& costs_;
  const EvaluateOptions& options_;
  const int m_;
  std::vector<double> ready_;
  const LinkFactors link_factors_;
  // With costs of one set per stage and no all-to-all: per stage, F, I, W, B (index 4 s + kind).
  std::vector<double> table_;
  std::vector<std::size_t> pc_;
  std::vector<double> clock_;
  std::vector<std::int64_t> blocked_on_;
  std::vector<int> in_flight_;
  std::vector<int> pending_w_;
  std::vector<int> worklist_;
  // With record_timeline: per input slot, the index of a RECV posted before its data arrived.
  static constexpr std::size_t kNoRecv = static_cast<std::size_t>(-1);
  std::vector<std::size_t> pending_recv_;
  Evaluation result_;
};

}  // namespace

Result<Evaluation> Evaluate(const Program& program, const Costs& costs,
                            const EvaluateOptions& options) {
  if (static_cast<int>(costs.stages.size()) != program.num_stages()) {
    return Status::InvalidArgument(fmt::format("costs: {} stage entries for a program of {} stages",
                                               costs.stages.size(), program.num_stages()));
  }
  if (!(options.p2p_latency >= 0.0 && options.p2p_latency <= kMaxCost)) {
    return Status::InvalidArgument(fmt::format("p2p latency = {}: must be a number in [0, {:g}]",
                                               options.p2p_latency, kMaxCost));
  }
  PIPETTE_RETURN_IF_ERROR(costs.Check(program.num_stages(), program.m));
  PIPETTE_RETURN_IF_ERROR(CheckLinkSlowdowns(options.link_slowdowns, program.p, "link slowdown"));
  Evaluator evaluator(program, costs, options);
  return evaluator.Run();
}

}  // namespace pipette
