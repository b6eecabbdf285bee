#include "pipette/schedule/lower.h"

#include <algorithm>
#include <vector>

#include "pipette/schedule/dependency_walk.h"

namespace pipette {
namespace {

constexpr std::size_t kPrefetchAhead = 8;  // instructions (192 bytes)

}  // namespace

std::size_t Program::num_instructions() const {
  std::size_t n = 0;
  for (const auto& rank : ranks) n += rank.instructions.size();
  return n;
}

Result<Program> Lower(const Schedule& s) {
  PIPETTE_RETURN_IF_ERROR(internal::CheckStructure(s));
  Program program;
  program.name = s.name;
  program.p = s.p;
  program.v = s.v;
  program.m = s.m;
  program.placement = s.placement;
  program.routes = s.routes;
  program.ranks.resize(s.p);
  for (int r = 0; r < s.p; ++r) {
    program.ranks[r].rank = r;
    // Every cross-rank hand-off adds a send and a receive: reserve for the worst case.
    program.ranks[r].instructions.reserve(3 * s.ranks[r].size());
  }

  // Appends a SEND or RECV to rank r, written field by field into its slot: an Action built on
  // the stack and copied whole (it is passed in memory) stalled on store forwarding, and that was
  // most of Lower's time.
  auto emit_message = [&](int r, ActionKind kind, int stage, int microbatch, int peer) {
    std::vector<Instruction>& instructions = program.ranks[r].instructions;
    // Ranks are written in turns, a few instructions each: fetch the lines ahead for writing.
    __builtin_prefetch(instructions.data() +
                           std::min(instructions.size() + kPrefetchAhead, instructions.capacity()),
                       1);
    Instruction& instruction = instructions.emplace_back();
    instruction.action.kind = kind;
    instruction.action.stage = stage;
    instruction.action.microbatch = microbatch;
    instruction.peer = peer;
  };
  // Appends the sends of one plain compute action placed on rank r, with their receives.
  auto communicate = [&](int r, const Action& a) {
    const int consumer_stage = ConsumerStage(s.routes[a.microbatch], a);
    if (consumer_stage < 0) return;
    const int peer = s.placement.rank_of(consumer_stage);
    if (peer == r) return;  // a hand-off between stages of one rank carries no message
    const bool forward = a.kind == ActionKind::kForward;
    emit_message(r, forward ? ActionKind::kSendForward : ActionKind::kSendBackward, a.stage,
                 a.microbatch, peer);
    emit_message(peer, forward ? ActionKind::kRecvForward : ActionKind::kRecvBackward,
                 consumer_stage, a.microbatch, r);
  };

  internal::DependencyWalk walk(s);  // finds any deadlock, like Validate()
  PIPETTE_RETURN_IF_ERROR(walk.Run([&](int r, const Action& a) {
    program.ranks[r].instructions.push_back({a, -1});
    if (a.kind == ActionKind::kOverlapped) {
      communicate(r, a.forward_half());
      communicate(r, a.backward_half());
    } else {
      communicate(r, a);
    }
  }));
  return program;
}

}  // namespace pipette
