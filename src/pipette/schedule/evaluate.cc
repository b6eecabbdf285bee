#include "pipette/schedule/evaluate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "pipette/schedule/message.h"

namespace pipette {
namespace {

constexpr double kNotYet = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kNotBlocked = -1;

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
  }

  Result<Evaluation> Run() {
    for (int r = prog_.p - 1; r >= 0; --r) worklist_.push_back(r);
    while (!worklist_.empty()) {
      const int r = worklist_.back();
      worklist_.pop_back();
      Advance(r);
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

 private:
  std::size_t Slot(const Message& message) const {
    return static_cast<std::size_t>(message.slot(m_));
  }

  // The latency of a message from rank `from` to the receiver of `message`.
  double LatencyTo(int from, const Message& message) const {
    if (link_factors_.empty()) return options_.p2p_latency;
    return options_.p2p_latency * link_factors_(from, prog_.placement.rank_of(message.stage));
  }

  // Makes `message` usable on its receiver at time t and wakes its rank if it waits for it.
  void Provide(const Message& message, double t) {
    const std::size_t slot = Slot(message);
    ready_[slot] = t;
    const int r = prog_.placement.rank_of(message.stage);
    if (options_.record_timeline && pending_recv_[slot] != kNoRecv) {
      Interval& recv = result_.timeline[r][pending_recv_[slot]];
      recv.end = std::max(recv.start, t);
    }
    if (blocked_on_[r] == static_cast<std::int64_t>(slot)) {
      blocked_on_[r] = kNotBlocked;
      worklist_.push_back(r);
    }
  }

  // Returns the input slot a plain compute action waits for, or -1 if it has none.
  std::int64_t InputSlot(const Action& a) const {
    const std::optional<Message> input = InputMessage(prog_.routes[a.microbatch], a);
    return input ? static_cast<std::int64_t>(Slot(*input)) : -1;
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
    const std::optional<Message> output = OutputMessage(prog_.routes[a.microbatch], a);
    if (!output || prog_.placement.rank_of(output->stage) != r) return;
    ready_[Slot(*output)] = end;
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
  void Advance(int r) {
    const auto& instructions = prog_.ranks[r].instructions;
    std::size_t& pc = pc_[r];
    double& clock = clock_[r];
    while (pc < instructions.size()) {
      const Action& a = instructions[pc].action;
      Interval span{clock, clock};
      switch (a.kind) {
        case ActionKind::kSendForward:
        case ActionKind::kSendBackward: {
          const Message message = MessageOf(a);
          Provide(message, clock + LatencyTo(r, message));
          break;
        }
        case ActionKind::kRecvForward:
        case ActionKind::kRecvBackward: {
          // A posted buffer: never blocks; its end is the arrival time when already known.
          const std::size_t slot = Slot(MessageOf(a));
          if (!std::isnan(ready_[slot])) {
            span.end = std::max(clock, ready_[slot]);
          } else if (options_.record_timeline) {
            pending_recv_[slot] = pc;  // its end is set when the data arrives (Provide)
          }
          break;
        }
        case ActionKind::kOverlapped: {
          double start = clock;
          if (!InputsReady(r, a.forward_half(), start) ||
              !InputsReady(r, a.backward_half(), start)) {
            return;
          }
          const double cost = costs_.Of(a);
          const double end = start + cost;
          ProduceLocal(r, a.forward_half(), end);
          ProduceLocal(r, a.backward_half(), end);
          Activations(r, a.forward_half());
          Activations(r, a.backward_half());
          result_.busy[r] += cost;  // not end - start, which loses precision late in a long run
          span = {start, end};
          clock = end;
          break;
        }
        default: {
          double start = clock;
          if (!InputsReady(r, a, start)) return;
          const double cost = costs_.Of(a);
          const double end = start + cost;
          ProduceLocal(r, a, end);
          Activations(r, a);
          result_.busy[r] += cost;
          span = {start, end};
          clock = end;
          break;
        }
      }
      if (options_.record_timeline) result_.timeline[r][pc] = span;
      ++pc;
    }
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
