#include "pipette/schedule/validate.h"

#include <fmt/core.h>

#include <cstdint>
#include <vector>

#include "pipette/schedule/dependency_walk.h"

namespace pipette {
namespace {

Status Invalid(std::string message) { return Status::FailedPrecondition(std::move(message)); }

// Per (stage, microbatch): positions of its actions on the rank that holds the stage.
struct Seen {
  std::int32_t f = -1, i = -1, w = -1, b = -1;
};

Status CheckShape(const Schedule& s) {
  if (s.p < 1 || static_cast<int>(s.ranks.size()) != s.p || s.placement.num_ranks() != s.p) {
    return Invalid(
        fmt::format("schedule has p = {} but {} rank lists and a placement over {} ranks", s.p,
                    s.ranks.size(), s.placement.num_ranks()));
  }
  if (s.m < 1 || static_cast<int>(s.routes.size()) != s.m) {
    return Invalid(
        fmt::format("schedule has m = {} but {} microbatch routes", s.m, s.routes.size()));
  }
  for (int i = 0; i < s.m; ++i) {
    const StageRange r = s.routes[i];
    if (r.first < 0 || r.last >= s.num_stages() || r.first > r.last) {
      return Invalid(fmt::format("microbatch {} has route {}..{}: stages are 0..{}", i, r.first,
                                 r.last, s.num_stages() - 1));
    }
  }
  return Status::Ok();
}

// Checks one plain compute action at `pos` on rank r and records it.
Status Record(const Schedule& s, int r, std::size_t pos, const Action& a, std::vector<Seen>& seen) {
  // Built only when reporting: this function runs once per action.
  auto where = [&] { return fmt::format("rank {}, action {} ({})", r, pos, ToString(a)); };
  if (a.stage < 0 || a.stage >= s.num_stages()) {
    return Invalid(fmt::format("{}: stage {} does not exist (stages are 0..{})", where(), a.stage,
                               s.num_stages() - 1));
  }
  if (a.microbatch < 0 || a.microbatch >= s.m) {
    return Invalid(fmt::format("{}: microbatch {} does not exist (microbatches are 0..{})", where(),
                               a.microbatch, s.m - 1));
  }
  if (s.placement.rank_of(a.stage) != r) {
    return Invalid(fmt::format("{}: stage {} is placed on rank {}", where(), a.stage,
                               s.placement.rank_of(a.stage)));
  }
  const StageRange route = s.routes[a.microbatch];
  if (!route.contains(a.stage)) {
    return Invalid(fmt::format("{}: microbatch {} passes stages {}..{} only", where(), a.microbatch,
                               route.first, route.last));
  }
  Seen& e = seen[static_cast<std::size_t>(a.stage) * s.m + a.microbatch];
  const auto pos32 = static_cast<std::int32_t>(pos);
  auto duplicate = [&](std::int32_t first) {
    return Invalid(fmt::format("{}: duplicate, first at action {}", where(), first));
  };
  switch (a.kind) {
    case ActionKind::kForward:
      if (e.f >= 0) return duplicate(e.f);
      e.f = pos32;
      return Status::Ok();
    case ActionKind::kInputBackward:
    case ActionKind::kFullBackward: {
      std::int32_t& slot = a.kind == ActionKind::kFullBackward ? e.b : e.i;
      if (slot >= 0) return duplicate(slot);
      if (e.b >= 0 || e.i >= 0) {
        return Invalid(
            fmt::format("{}: the stage already has a {} for this microbatch (action "
                        "{}); use either one B or one I and one W",
                        where(), e.b >= 0 ? "B" : "I", e.b >= 0 ? e.b : e.i));
      }
      if (e.f < 0) return Invalid(fmt::format("{}: comes before its forward", where()));
      slot = pos32;
      return Status::Ok();
    }
    case ActionKind::kWeightBackward:
      if (e.w >= 0) return duplicate(e.w);
      if (e.b >= 0) {
        return Invalid(
            fmt::format("{}: the stage already ran a full backward B (action {}), which "
                        "includes W",
                        where(), e.b));
      }
      if (e.i < 0) return Invalid(fmt::format("{}: comes before its input-gradient I", where()));
      e.w = pos32;
      return Status::Ok();
    default:
      return Invalid(fmt::format("{}: a compute-only schedule holds no communication", where()));
  }
}

// Record()'s checks and bookkeeping without building a Status, for the common case: true when
// `a` is fine (and then recorded, as Record() would); false, with nothing recorded, when Record()
// has an error to report.
bool RecordIfValid(const Schedule& s, int r, std::int32_t pos, const Action& a,
                   std::vector<Seen>& seen) {
  if (a.stage < 0 || a.stage >= s.num_stages() || a.microbatch < 0 || a.microbatch >= s.m ||
      s.placement.rank_of(a.stage) != r || !s.routes[a.microbatch].contains(a.stage)) {
    return false;
  }
  Seen& e = seen[static_cast<std::size_t>(a.stage) * s.m + a.microbatch];
  switch (a.kind) {
    case ActionKind::kForward:
      if (e.f >= 0) return false;
      e.f = pos;
      return true;
    case ActionKind::kInputBackward:
    case ActionKind::kFullBackward:
      if (e.b >= 0 || e.i >= 0 || e.f < 0) return false;
      (a.kind == ActionKind::kFullBackward ? e.b : e.i) = pos;
      return true;
    case ActionKind::kWeightBackward:
      if (e.w >= 0 || e.b >= 0 || e.i < 0) return false;
      e.w = pos;
      return true;
    default:
      return false;
  }
}

// Records `a` (a plain compute action at `pos` on rank r), or returns the reason it is wrong.
Status CheckAndRecord(const Schedule& s, int r, std::size_t pos, const Action& a,
                      std::vector<Seen>& seen) {
  if (RecordIfValid(s, r, static_cast<std::int32_t>(pos), a, seen)) return Status::Ok();
  return Record(s, r, pos, a, seen);
}

}  // namespace

namespace internal {

Status CheckStructure(const Schedule& s) {
  PIPETTE_RETURN_IF_ERROR(CheckShape(s));
  std::vector<Seen> seen(static_cast<std::size_t>(s.num_stages()) * s.m);
  for (int r = 0; r < s.p; ++r) {
    for (std::size_t pos = 0; pos < s.ranks[r].size(); ++pos) {
      const Action& a = s.ranks[r][pos];
      if (a.kind == ActionKind::kOverlapped) {
        if (!IsInputBackward(a.back_kind)) {
          return Invalid(
              fmt::format("rank {}, action {} ({}): the second half of an overlapped cell "
                          "must be a B or an I backward",
                          r, pos, ToString(a)));
        }
        PIPETTE_RETURN_IF_ERROR(CheckAndRecord(s, r, pos, a.forward_half(), seen));
        PIPETTE_RETURN_IF_ERROR(CheckAndRecord(s, r, pos, a.backward_half(), seen));
      } else {
        PIPETTE_RETURN_IF_ERROR(CheckAndRecord(s, r, pos, a, seen));
      }
    }
  }
  for (int i = 0; i < s.m; ++i) {
    for (int stage = s.routes[i].first; stage <= s.routes[i].last; ++stage) {
      const Seen& e = seen[static_cast<std::size_t>(stage) * s.m + i];
      const int r = s.placement.rank_of(stage);
      if (e.f < 0) return Invalid(fmt::format("rank {}: missing {}F{}", r, stage, i));
      if (e.b < 0 && e.i < 0) {
        return Invalid(
            fmt::format("rank {}: missing the backward of stage {} microbatch {} "
                        "({}B{}, or {}I{} and {}W{})",
                        r, stage, i, stage, i, stage, i, stage, i));
      }
      if (e.i >= 0 && e.w < 0) {
        return Invalid(fmt::format("rank {}: missing {}W{} (its {}I{} is action {})", r, stage, i,
                                   stage, i, e.i));
      }
    }
  }
  return Status::Ok();
}

}  // namespace internal

Status Validate(const Schedule& s) {
  PIPETTE_RETURN_IF_ERROR(internal::CheckStructure(s));
  internal::DependencyWalk walk(s);
  return walk.Run([](int, const Action&) {});
}

}  // namespace pipette
