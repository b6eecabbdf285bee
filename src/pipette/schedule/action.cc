#include "pipette/schedule/action.h"

#include <fmt/core.h>

#include <array>
#include <cctype>
#include <charconv>
#include <utility>

#include "pipette/common/printable.h"

namespace pipette {
namespace {

// Longest names first, so that "SEND_F" is tried before "F".
constexpr std::array<std::pair<std::string_view, ActionKind>, 12> kKindSpellings = {{
    {"BACKWARD_WEIGHT", ActionKind::kWeightBackward},
    {"BACKWARD_INPUT", ActionKind::kInputBackward},
    {"FULL_BACKWARD", ActionKind::kFullBackward},
    {"FORWARD", ActionKind::kForward},
    {"SEND_F", ActionKind::kSendForward},
    {"RECV_F", ActionKind::kRecvForward},
    {"SEND_B", ActionKind::kSendBackward},
    {"RECV_B", ActionKind::kRecvBackward},
    {"F", ActionKind::kForward},
    {"I", ActionKind::kInputBackward},
    {"W", ActionKind::kWeightBackward},
    {"B", ActionKind::kFullBackward},
}};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Status Malformed(std::string_view text, std::string_view why) {
  return Status::InvalidArgument(fmt::format("action '{}': {}", Printable(text), why));
}

// Parses "<stage><KIND><microbatch>" with no parentheses.
Result<Action> ParseSimple(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0) return Malformed(text, "expected <stage><kind><microbatch>, e.g. 2F0");
  int stage = 0;
  auto [p1, e1] = std::from_chars(text.data(), text.data() + pos, stage);
  if (e1 != std::errc()) return Malformed(text, "stage number out of range");

  std::string_view rest = text.substr(pos);
  for (const auto& [spelling, kind] : kKindSpellings) {
    if (rest.substr(0, spelling.size()) != spelling) continue;
    std::string_view digits = rest.substr(spelling.size());
    if (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits.front()))) {
      return Malformed(text, "expected a microbatch number after the kind");
    }
    int mb = 0;
    auto [p2, e2] = std::from_chars(digits.data(), digits.data() + digits.size(), mb);
    if (e2 != std::errc() || p2 != digits.data() + digits.size()) {
      return Malformed(text, "microbatch must be a non-negative integer");
    }
    return Action::Make(kind, stage, mb);
  }
  return Malformed(text, "unknown kind (expected F, I, W, B, SEND_F, RECV_F, SEND_B or RECV_B)");
}

}  // namespace

std::string_view ActionKindName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return "F";
    case ActionKind::kInputBackward:
      return "I";
    case ActionKind::kWeightBackward:
      return "W";
    case ActionKind::kFullBackward:
      return "B";
    case ActionKind::kOverlapped:
      return "OVERLAP_F_B";
    case ActionKind::kSendForward:
      return "SEND_F";
    case ActionKind::kRecvForward:
      return "RECV_F";
    case ActionKind::kSendBackward:
      return "SEND_B";
    case ActionKind::kRecvBackward:
      return "RECV_B";
  }
  return "?";
}

std::string ToString(const Action& action) {
  if (action.kind == ActionKind::kOverlapped) {
    return fmt::format("({};{})", ToString(action.forward_half()),
                       ToString(action.backward_half()));
  }
  return fmt::format("{}{}{}", action.stage, ActionKindName(action.kind), action.microbatch);
}

Result<Action> ParseAction(std::string_view raw) {
  std::string_view text = Trim(raw);
  if (text.empty()) return Malformed(raw, "empty");
  if (text.front() != '(') {
    PIPETTE_ASSIGN_OR_RETURN(Action action, ParseSimple(text));
    return action;
  }
  std::size_t close = text.find(')');
  if (close == std::string_view::npos) return Malformed(text, "missing ')'");
  std::string_view suffix = text.substr(close + 1);
  if (!suffix.empty() && suffix != "OVERLAP_F_B") {
    return Malformed(text, "only OVERLAP_F_B may follow an overlapped cell");
  }
  std::string_view inner = text.substr(1, close - 1);
  std::size_t semi = inner.find(';');
  if (semi == std::string_view::npos || inner.find(';', semi + 1) != std::string_view::npos) {
    return Malformed(text, "an overlapped cell holds exactly two actions: (F;B)");
  }
  PIPETTE_ASSIGN_OR_RETURN(Action forward, ParseSimple(Trim(inner.substr(0, semi))));
  PIPETTE_ASSIGN_OR_RETURN(Action backward, ParseSimple(Trim(inner.substr(semi + 1))));
  if (forward.kind != ActionKind::kForward || !IsInputBackward(backward.kind)) {
    return Malformed(text, "an overlapped cell is a forward then a B or I backward: (0F7;7B3)");
  }
  return Action::Overlap(forward, backward);
}

}  // namespace pipette
