#include "pipette/engine/gemm_table.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "pipette/engine/measured_costs.h"

namespace pipette {
namespace {

double Flops(double m, double n, double k) { return 2 * m * n * k; }

auto Key(const GemmTiming& t) { return std::tuple{static_cast<int>(t.pass), t.m, t.n, t.k}; }

std::vector<std::int64_t> Distinct(const std::vector<GemmTiming>& timings,
                                   std::int64_t GemmTiming::*size) {
  std::vector<std::int64_t> out;
  for (const GemmTiming& t : timings) out.push_back(t.*size);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The bracket of `x` in `grid` in log2 space: the lower index and the weight of the upper one
// (clamped to the grid's ends).
std::pair<std::size_t, double> Bracket(const std::vector<std::int64_t>& grid, double x) {
  if (grid.size() == 1 || x <= static_cast<double>(grid.front())) return {0, 0.0};
  if (x >= static_cast<double>(grid.back())) return {grid.size() - 2, 1.0};
  std::size_t i = 0;
  while (static_cast<double>(grid[i + 1]) < x) ++i;
  const double lo = std::log2(static_cast<double>(grid[i]));
  const double hi = std::log2(static_cast<double>(grid[i + 1]));
  return {i, (std::log2(x) - lo) / (hi - lo)};
}

Status Ragged(GemmPass pass, std::int64_t m, std::int64_t n, std::int64_t k, bool repeated) {
  return Status::InvalidArgument(
      fmt::format("GEMM table: {} shape {}x{}x{} is {}: a table covers every combination of its "
                  "m, n and k sizes once per pass",
                  GemmPassName(pass), m, n, k, repeated ? "repeated" : "missing"));
}

}  // namespace

std::string_view GemmPassName(GemmPass pass) {
  return pass == GemmPass::kForward ? "F" : pass == GemmPass::kInputGrad ? "I" : "W";
}

std::optional<GemmPass> GemmPassOf(std::string_view name) {
  for (const GemmPass pass : kAllGemmPasses) {
    if (name == GemmPassName(pass)) return pass;
  }
  return std::nullopt;
}

std::vector<std::int64_t> GemmTableSizes(std::int64_t max) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t s = 16; s <= max; s *= 2) sizes.push_back(s);
  return sizes;
}

std::vector<GemmTiming> TimeGemmTableInRounds(const std::vector<std::int64_t>& sizes, int repeats,
                                              int ranks, const GemmRepeatTimer& time_repeat) {
  std::vector<GemmShape> shapes;
  for (const std::int64_t m : sizes) {
    for (const std::int64_t n : sizes) {
      for (const std::int64_t k : sizes) shapes.push_back({m, n, k});
    }
  }
  // seconds[pass][shape]: one per round.
  std::vector<std::vector<std::vector<double>>> seconds(
      kGemmPasses, std::vector<std::vector<double>>(shapes.size()));
  for (int round = -1; round < repeats; ++round) {  // round -1 warms up
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      for (const GemmPass pass : kAllGemmPasses) {
        const double t = time_repeat(pass, shapes[i].m, shapes[i].n, shapes[i].k);
        if (round >= 0) seconds[static_cast<int>(pass)][i].push_back(t);
      }
    }
  }
  std::vector<GemmTiming> out;
  for (const GemmPass pass : kAllGemmPasses) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::vector<double>& rounds = seconds[static_cast<int>(pass)][i];
      if (rounds.empty()) continue;
      out.push_back({shapes[i].m, shapes[i].n, shapes[i].k, ranks, Median(rounds), pass});
    }
  }
  return out;
}

Result<GemmTable> GemmTable::Of(std::vector<GemmTiming> timings) {
  std::sort(timings.begin(), timings.end(),
            [](const GemmTiming& a, const GemmTiming& b) { return Key(a) < Key(b); });
  for (const GemmTiming& t : timings) {
    if (t.m < 1 || t.n < 1 || t.k < 1 || !(t.seconds > 0) || !std::isfinite(t.seconds)) {
      return Status::InvalidArgument(
          fmt::format("GEMM table: {} shape {}x{}x{} at {} s: sizes must be at least 1 and the "
                      "time positive",
                      GemmPassName(t.pass), t.m, t.n, t.k, t.seconds));
    }
  }
  GemmTable table;
  auto begin = timings.begin();
  while (begin != timings.end()) {
    const GemmPass pass = begin->pass;
    const auto end =
        std::find_if(begin, timings.end(), [&](const GemmTiming& t) { return t.pass != pass; });
    const std::vector<GemmTiming> mine(begin, end);
    Grid& grid = table.grids_[static_cast<int>(pass)];
    grid.ms = Distinct(mine, &GemmTiming::m);
    grid.ns = Distinct(mine, &GemmTiming::n);
    grid.ks = Distinct(mine, &GemmTiming::k);
    std::size_t i = 0;
    for (const std::int64_t m : grid.ms) {
      for (const std::int64_t n : grid.ns) {
        for (const std::int64_t k : grid.ks) {
          const auto want = std::tuple{static_cast<int>(pass), m, n, k};
          if (i >= mine.size() || Key(mine[i]) != want) {
            return Ragged(pass, m, n, k, i < mine.size() && Key(mine[i]) < want);
          }
          grid.log_per_flop.push_back(std::log(mine[i].seconds / Flops(m, n, k)));
          ++i;
        }
      }
    }
    if (i != mine.size()) return Ragged(pass, mine[i].m, mine[i].n, mine[i].k, true);
    begin = end;
  }
  table.timings_ = std::move(timings);
  return table;
}

double GemmTable::SecondsOf(const GemmShape& shape, GemmPass pass) const {
  const Grid* grid = &grids_[static_cast<int>(pass)];
  if (grid->log_per_flop.empty()) grid = &grids_[static_cast<int>(timings_.front().pass)];
  const double m = static_cast<double>(shape.m), n = static_cast<double>(shape.n),
               k = static_cast<double>(shape.k);
  const auto [im, wm] = Bracket(grid->ms, m);
  const auto [in, wn] = Bracket(grid->ns, n);
  const auto [ik, wk] = Bracket(grid->ks, k);
  double log_per_flop = 0;
  for (int dm = 0; dm < 2; ++dm) {
    for (int dn = 0; dn < 2; ++dn) {
      for (int dk = 0; dk < 2; ++dk) {
        const double weight = (dm ? wm : 1 - wm) * (dn ? wn : 1 - wn) * (dk ? wk : 1 - wk);
        if (weight == 0) continue;
        const std::size_t index =
            ((im + dm) * grid->ns.size() + in + dn) * grid->ks.size() + ik + dk;
        log_per_flop += weight * grid->log_per_flop[index];
      }
    }
  }
  return std::exp(log_per_flop) * Flops(m, n, k);
}

}  // namespace pipette
