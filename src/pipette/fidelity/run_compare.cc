#include "pipette/fidelity/run_compare.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "pipette/fidelity/relative_error.h"
#include "pipette/store/run_config.h"

namespace pipette {
namespace {

std::string RunName(const RunData& run) {
  return fmt::format("run {} ({})", run.run.id, run.run.engine);
}

std::string Mismatch(const RunData& a, const RunData& b, const std::string& what) {
  return fmt::format("{} and {} are not the same program: {}", RunName(a), RunName(b), what);
}

std::string ConfigValue(const nlohmann::ordered_json* value) {
  return value != nullptr ? value->dump() : std::string("absent");
}

Status CheckSameProgram(const RunData& a, const RunData& b) {
  const RecordedConfig ca = ReadRunConfig(a.run.config), cb = ReadRunConfig(b.run.config);
  for (const RunKey key : kProgramKeys) {
    const nlohmann::ordered_json *in_a = ca.Find(key), *in_b = cb.Find(key);
    if ((in_a == nullptr) == (in_b == nullptr) && (in_a == nullptr || *in_a == *in_b)) continue;
    return Status::InvalidArgument(
        Mismatch(a, b,
                 fmt::format("configuration key '{}' is {} in {} and {} in {}", NameOf(key),
                             ConfigValue(in_a), RunName(a), ConfigValue(in_b), RunName(b))));
  }
  // A prediction from a recorded run predicts that run and no other.
  for (const auto& [x, cx, y] : {std::tuple{&a, &ca, &b}, std::tuple{&b, &cb, &a}}) {
    if (cx->costs_from && *cx->costs_from != y->run.id) {
      return Status::InvalidArgument(
          Mismatch(a, b,
                   fmt::format("{} predicts run {} (costs_from), not {}", RunName(*x),
                               *cx->costs_from, RunName(*y))));
    }
  }
  return Status::Ok();
}

EventKey KeyOf(const EventRow& e) { return EventKey{0, e.rank, e.step, e.instr_id, e.kind}; }

using KeyedEvents = std::vector<std::pair<EventKey, const EventRow*>>;

// The run's events sorted by key; InvalidArgument for a run without events or a key twice.
Result<KeyedEvents> SortedEvents(const RunData& run, const RunData& other) {
  if (run.events.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{} has no events (recorded with --trace none or summary): nothing to join with {}",
        RunName(run), RunName(other)));
  }
  KeyedEvents keyed;
  keyed.reserve(run.events.size());
  for (const EventRow& e : run.events) keyed.emplace_back(KeyOf(e), &e);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (std::size_t k = 1; k < keyed.size(); ++k) {
    if (keyed[k].first == keyed[k - 1].first) {
      return Status::InvalidArgument(fmt::format("{} records {} twice: cannot join it with {}",
                                                 RunName(run), DescribeKey(keyed[k].first),
                                                 RunName(other)));
    }
  }
  return keyed;
}

// Step k's origin (earliest start) and end (latest end) in one run.
struct StepBounds {
  double origin = 0, end = 0;
};

std::map<int, StepBounds> BoundsOf(const RunData& run) {
  std::map<int, StepBounds> bounds;
  for (const EventRow& e : run.events) {
    auto [it, inserted] = bounds.try_emplace(e.step, StepBounds{e.start_s, e.end_s});
    if (!inserted) {
      it->second.origin = std::min(it->second.origin, e.start_s);
      it->second.end = std::max(it->second.end, e.end_s);
    }
  }
  return bounds;
}

EventPair Pair(const EventKey& key, const EventRow& p, const EventRow& m, const StepBounds& pb,
               const StepBounds& mb) {
  EventPair pair;
  pair.key = key;
  pair.stage = m.stage;
  pair.microbatch = m.microbatch;
  pair.predicted_start_s = p.start_s - pb.origin;
  pair.measured_start_s = m.start_s - mb.origin;
  pair.predicted_duration_s = p.end_s - p.start_s;
  pair.measured_duration_s = m.end_s - m.start_s;
  pair.start_error_s = pair.predicted_start_s - pair.measured_start_s;
  const double span = mb.end - mb.origin;
  pair.start_error_frac = span > 0 ? pair.start_error_s / span : 0;
  pair.duration_error_s = pair.predicted_duration_s - pair.measured_duration_s;
  if (pair.measured_duration_s > 0) {
    pair.duration_error_rel = pair.duration_error_s / pair.measured_duration_s;
  }
  return pair;
}

// Joins the sorted events; the first key in one run only, or with other attributes, is an error.
Result<std::vector<EventPair>> Join(const RunData& predicted, const RunData& measured,
                                    const KeyedEvents& p, const KeyedEvents& m) {
  const std::map<int, StepBounds> pb = BoundsOf(predicted), mb = BoundsOf(measured);
  std::vector<EventPair> pairs;
  pairs.reserve(p.size());
  std::size_t i = 0, j = 0;
  while (i < p.size() || j < m.size()) {
    const bool only_p = j == m.size() || (i < p.size() && p[i].first < m[j].first);
    const bool only_m = i == p.size() || (j < m.size() && m[j].first < p[i].first);
    if (only_p || only_m) {
      const RunData& in = only_p ? predicted : measured;
      const RunData& out = only_p ? measured : predicted;
      const EventKey& key = only_p ? p[i].first : m[j].first;
      return Status::InvalidArgument(Mismatch(
          predicted, measured,
          fmt::format("{} is in {} and not in {}", DescribeKey(key), RunName(in), RunName(out))));
    }
    const EventRow& a = *p[i].second;
    const EventRow& b = *m[j].second;
    if (a.stage != b.stage || a.chunk != b.chunk || a.microbatch != b.microbatch) {
      return Status::InvalidArgument(Mismatch(
          predicted, measured,
          fmt::format("{} is stage {} chunk {} microbatch {} in {} and stage {} chunk {} "
                      "microbatch {} in {}",
                      DescribeKey(p[i].first), a.stage, a.chunk, a.microbatch, RunName(predicted),
                      b.stage, b.chunk, b.microbatch, RunName(measured))));
    }
    pairs.push_back(Pair(p[i].first, a, b, pb.at(a.step), mb.at(b.step)));
    ++i;
    ++j;
  }
  return pairs;
}

ErrorStats StatsOf(std::vector<double> values) {
  ErrorStats s;
  s.count = static_cast<int>(values.size());
  s.median = Percentile(values, 50);
  s.p90 = Percentile(std::move(values), 90);
  return s;
}

KindErrors ErrorsOf(EventKind kind, const std::vector<const EventPair*>& pairs) {
  std::vector<double> start_s, start_frac, dur_abs_rel, dur_rel, dur_abs_s;
  for (const EventPair* p : pairs) {
    start_s.push_back(std::abs(p->start_error_s));
    start_frac.push_back(std::abs(p->start_error_frac));
    dur_abs_s.push_back(std::abs(p->duration_error_s));
    if (p->duration_error_rel) {
      dur_rel.push_back(*p->duration_error_rel);
      dur_abs_rel.push_back(std::abs(*p->duration_error_rel));
    }
  }
  KindErrors k;
  k.kind = kind;
  k.count = static_cast<int>(pairs.size());
  k.start_abs_s = StatsOf(std::move(start_s));
  k.start_abs_frac = StatsOf(std::move(start_frac));
  k.duration_abs_rel = StatsOf(std::move(dur_abs_rel));
  k.duration_signed_median_rel = Percentile(std::move(dur_rel), 50);
  k.duration_abs_s = StatsOf(std::move(dur_abs_s));
  return k;
}

std::optional<double> FindMetric(const RunData& run, const std::string& name) {
  const double value = run.Metric(name, std::numeric_limits<double>::quiet_NaN());
  return std::isnan(value) ? std::nullopt : std::optional<double>(value);
}

void AddRunLevel(const RunData& predicted, const RunData& measured, RunComparison& c) {
  const std::map<int, StepBounds> pb = BoundsOf(predicted), mb = BoundsOf(measured);
  // The steady-state step time over the steps both traced (RunData::SteadyStepTime).
  const int steps = mb.empty() ? 0 : mb.rbegin()->first + 1;
  if (FindMetric(predicted, "step_time_s") && FindMetric(measured, "step_time_s")) {
    const double ps = predicted.SteadyStepTime(steps), ms = measured.SteadyStepTime(steps);
    c.step_time = StepTime{ps, ms, RelativeError(ps, ms)};
  }
  for (const auto& [step, m] : mb) {
    const StepBounds& p = pb.at(step);  // the join made the steps equal
    const double p_span = p.end - p.origin, m_span = m.end - m.origin;
    c.steps.push_back(StepSpan{step, p_span, m_span, RelativeError(p_span, m_span)});
  }
  for (int r = 0;; ++r) {
    const std::string name = fmt::format("peak_memory_bytes[{}]", r);
    const std::optional<double> p = FindMetric(predicted, name), m = FindMetric(measured, name);
    if (!p && !m) break;
    if (p && m) c.memory.push_back(RankPeakMemory{r, *p, *m, RelativeError(*p, *m)});
  }
}

void AddStatistics(std::vector<EventPair> pairs, int worst, RunComparison& c) {
  std::map<EventKind, std::vector<const EventPair*>> by_kind;
  std::vector<const EventPair*> every, compute;
  for (const EventPair& p : pairs) {
    by_kind[p.key.kind].push_back(&p);
    every.push_back(&p);
    const EventKind k = p.key.kind;
    if (k == EventKind::kF || k == EventKind::kI || k == EventKind::kW || k == EventKind::kB) {
      compute.push_back(&p);
    }
  }
  for (const auto& [kind, list] : by_kind) c.kinds.push_back(ErrorsOf(kind, list));
  c.all = ErrorsOf(EventKind::kF, every);
  c.compute = ErrorsOf(EventKind::kF, compute);
  c.pairs = pairs.size();
  const auto worse = [](const EventPair& x, const EventPair& y) {
    const double dx = x.displacement_s(), dy = y.displacement_s();
    return dx != dy ? dx > dy : x.key < y.key;
  };
  const std::size_t keep = std::min<std::size_t>(static_cast<std::size_t>(worst), pairs.size());
  std::partial_sort(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(keep), pairs.end(),
                    worse);
  pairs.resize(keep);
  c.worst = std::move(pairs);
}

}  // namespace

std::string DescribeKey(const EventKey& key) {
  if (key.instr_id < 0) {
    return fmt::format("replica {} rank {} step {} {}", key.replica, key.rank, key.step,
                       EventKindName(key.kind));
  }
  return fmt::format("replica {} rank {} step {} instr {} ({})", key.replica, key.rank, key.step,
                     key.instr_id, EventKindName(key.kind));
}

double EventPair::displacement_s() const {
  return std::max(std::abs(start_error_s), std::abs(start_error_s + duration_error_s));
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(q, 0.0, 100.0) / 100 * static_cast<double>(values.size() - 1);
  const std::size_t i = static_cast<std::size_t>(std::floor(rank));
  if (i + 1 >= values.size()) return values.back();
  return values[i] + (rank - static_cast<double>(i)) * (values[i + 1] - values[i]);
}

std::pair<const RunData*, const RunData*> OrderForComparison(const RunData& a, const RunData& b) {
  if (a.run.engine != "sim" && b.run.engine == "sim") return {&b, &a};
  return {&a, &b};
}

Result<RunComparison> CompareRuns(const RunData& predicted, const RunData& measured, int worst) {
  if (worst < 0) return Status::InvalidArgument(fmt::format("--worst = {}: must be >= 0", worst));
  PIPETTE_RETURN_IF_ERROR(CheckSameProgram(predicted, measured));
  PIPETTE_ASSIGN_OR_RETURN(KeyedEvents p, SortedEvents(predicted, measured));
  PIPETTE_ASSIGN_OR_RETURN(KeyedEvents m, SortedEvents(measured, predicted));
  PIPETTE_ASSIGN_OR_RETURN(std::vector<EventPair> pairs, Join(predicted, measured, p, m));
  RunComparison c;
  c.predicted_run = predicted.run.id;
  c.measured_run = measured.run.id;
  c.predicted_engine = predicted.run.engine;
  c.measured_engine = measured.run.engine;
  AddRunLevel(predicted, measured, c);
  AddStatistics(std::move(pairs), worst, c);
  return c;
}

}  // namespace pipette
