#include "pipette/schedule/uneven_work.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "pipette/common/bounded_file.h"
#include "pipette/common/printable.h"
#include "pipette/common/split.h"

namespace pipette {
namespace {

// Splits `text` at commas; an empty text gives no items.
std::vector<std::string> SplitCommas(std::string_view text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  for (const std::string& item : SplitAt(text, ',')) {
    const std::size_t first = item.find_first_not_of(" \t");
    const std::size_t last = item.find_last_not_of(" \t");
    items.push_back(first == std::string::npos ? "" : item.substr(first, last - first + 1));
  }
  return items;
}

// Parses a whole decimal integer (no sign, no blanks); nullopt-like false on anything else.
bool ParseInt(const std::string& text, long long& out) {
  if (text.empty() || text.size() > 12) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  out = std::strtoll(text.c_str(), nullptr, 10);
  return true;
}

bool ParseDouble(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return *end == '\0' && errno == 0 && std::isfinite(out);
}

// Parses a rank index of a "RANK=..." item.
Status ParseRank(const std::string& text, int p, std::string_view key, const std::string& item,
                 int& rank) {
  long long r = 0;
  if (!ParseInt(text, r) || r >= p) {
    return Status::InvalidArgument(fmt::format("{} '{}': rank '{}' must be an integer in [0, {})",
                                               key, Printable(item), Printable(text), p));
  }
  rank = static_cast<int>(r);
  return Status::Ok();
}

// Returns the numbers of a seqlen list: items separated by commas and blanks, '#' comments.
Result<std::vector<int>> ParseSeqlenTokens(std::string_view text, std::string_view key,
                                           std::string_view source) {
  std::vector<int> out;
  std::string token;
  bool comment = false;
  auto flush = [&]() -> Status {
    if (token.empty()) return Status::Ok();
    long long value = 0;
    if (!ParseInt(token, value) || value < 1 || value > kMaxSeqlen) {
      return Status::InvalidArgument(
          fmt::format("{} {}: item {} '{}' must be an integer in [1, {}]", key, source, out.size(),
                      Printable(token), kMaxSeqlen));
    }
    out.push_back(static_cast<int>(value));
    token.clear();
    return Status::Ok();
  };
  for (char c : text) {
    if (c == '\n') comment = false;
    if (comment) continue;
    if (c == '#') {
      comment = true;
    } else if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      PIPETTE_RETURN_IF_ERROR(flush());
    } else {
      token += c;
    }
  }
  PIPETTE_RETURN_IF_ERROR(flush());
  return out;
}

bool LooksLikeList(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || c == ',' || c == ' ' || c == '\t')) return false;
  }
  return true;
}

// Fills `out` with `set` scaled by `factor` and each stage divided by its rank's speed.
StageCostSet ScaledSet(const std::vector<StageCost>& stages, const std::vector<double>& full,
                       double factor, const Placement& placement, const UnevenWork& work) {
  StageCostSet out;
  out.stages.reserve(stages.size());
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const double k = factor / work.SpeedOf(placement.rank_of(static_cast<int>(s)));
    const StageCost& c = stages[s];
    out.stages.push_back(StageCost{c.f * k, c.i * k, c.w * k});
    if (!full.empty()) out.full_backward.push_back(full[s] * k);
  }
  return out;
}

Status CheckPlacement(const Costs& costs, const Placement& placement) {
  if (!costs.microbatch_variant.empty()) {
    return Status::InvalidArgument("uneven work: the nominal costs already vary per microbatch");
  }
  if (static_cast<int>(costs.stages.size()) != placement.num_stages()) {
    return Status::InvalidArgument(
        fmt::format("uneven work: {} stage costs for a placement of {} stages", costs.stages.size(),
                    placement.num_stages()));
  }
  return Status::Ok();
}

}  // namespace

bool UnevenWork::IsEven() const {
  for (double s : rank_speed) {
    if (s != 1.0) return false;
  }
  for (int s : microbatch_seqlens) {
    if (s != reference_seqlen) return false;
  }
  for (const LinkSlowdown& l : link_slowdowns) {
    if (l.factor != 1.0) return false;
  }
  return true;
}

LinkFactors::LinkFactors(const std::vector<LinkSlowdown>& slowdowns) {
  for (const LinkSlowdown& l : slowdowns) {
    auto [it, inserted] = factor_.try_emplace(Key(l.a, l.b), l.factor);
    if (!inserted) it->second *= l.factor;
  }
}

double LinkFactors::operator()(int a, int b) const {
  if (factor_.empty()) return 1.0;
  const auto it = factor_.find(Key(a, b));
  return it == factor_.end() ? 1.0 : it->second;
}

std::uint64_t LinkFactors::Key(int a, int b) {
  return (static_cast<std::uint64_t>(std::min(a, b)) << 32) |
         static_cast<std::uint32_t>(std::max(a, b));
}

Status CheckLinkSlowdowns(const std::vector<LinkSlowdown>& slowdowns, int p, std::string_view key) {
  for (const LinkSlowdown& l : slowdowns) {
    if (l.a < 0 || l.a >= p || l.b < 0 || l.b >= p || l.a == l.b ||
        !(l.factor >= 1.0 && l.factor <= kMaxLinkSlowdown)) {
      return Status::InvalidArgument(
          fmt::format("{} {}-{}={}: ranks must differ and lie in [0, {}), factor in [1, {:g}]", key,
                      l.a, l.b, l.factor, p, kMaxLinkSlowdown));
    }
  }
  return Status::Ok();
}

Result<std::vector<double>> ParseRankSpeeds(std::string_view text, int p, std::string_view key) {
  std::vector<double> speeds;
  const std::vector<std::string> items = SplitCommas(text);
  if (items.empty()) return speeds;
  speeds.assign(p, 1.0);
  std::set<int> seen;
  for (const std::string& item : items) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return Status::InvalidArgument(fmt::format(
          "{} '{}': expected RANK=SPEED items such as 3=0.8,1=0.5", key, Printable(item)));
    }
    int rank = 0;
    PIPETTE_RETURN_IF_ERROR(ParseRank(item.substr(0, eq), p, key, item, rank));
    const std::string number = item.substr(eq + 1);
    double speed = 0.0;
    if (!ParseDouble(number, speed) || !(speed > 0.0 && speed <= kMaxRankSpeed)) {
      return Status::InvalidArgument(
          fmt::format("{} '{}': speed '{}' must be a number in (0, {:g}]", key, Printable(item),
                      Printable(number), kMaxRankSpeed));
    }
    if (!seen.insert(rank).second) {
      return Status::InvalidArgument(
          fmt::format("{} '{}': rank {} is given twice; give each rank at most once", key,
                      Printable(item), rank));
    }
    speeds[rank] = speed;
  }
  return speeds;
}

Result<std::vector<int>> ParseMicrobatchSeqlens(std::string_view list_or_file, int m,
                                                std::string_view key) {
  std::vector<int> seqlens;
  std::string source = "list";
  if (list_or_file.empty()) return seqlens;
  if (LooksLikeList(list_or_file)) {
    PIPETTE_ASSIGN_OR_RETURN(seqlens, ParseSeqlenTokens(list_or_file, key, "list"));
  } else {
    const std::string path(list_or_file);
    Result<std::string> text = ReadFileBounded(path, 64 << 20, fmt::format("{} file", key));
    if (!text.ok()) return text.status();
    source = fmt::format("file '{}'", Printable(path));
    PIPETTE_ASSIGN_OR_RETURN(seqlens, ParseSeqlenTokens(*text, key, source));
  }
  if (static_cast<int>(seqlens.size()) != m) {
    return Status::InvalidArgument(
        fmt::format("{} {}: {} sequence lengths for {} microbatches; give exactly one per "
                    "microbatch",
                    key, source, seqlens.size(), m));
  }
  return seqlens;
}

Result<std::vector<LinkSlowdown>> ParseLinkSlowdowns(std::string_view text, int p,
                                                     std::string_view key) {
  std::vector<LinkSlowdown> out;
  std::set<std::pair<int, int>> seen;
  for (const std::string& item : SplitCommas(text)) {
    const std::size_t eq = item.find('=');
    const std::size_t dash = item.find('-');
    if (eq == std::string::npos || dash == std::string::npos || dash > eq) {
      return Status::InvalidArgument(fmt::format(
          "{} '{}': expected A-B=FACTOR items such as 0-1=2,2-3=1.5", key, Printable(item)));
    }
    LinkSlowdown l;
    PIPETTE_RETURN_IF_ERROR(ParseRank(item.substr(0, dash), p, key, item, l.a));
    PIPETTE_RETURN_IF_ERROR(ParseRank(item.substr(dash + 1, eq - dash - 1), p, key, item, l.b));
    if (l.a == l.b) {
      return Status::InvalidArgument(fmt::format(
          "{} '{}': a link joins two different ranks (got {} twice)", key, Printable(item), l.a));
    }
    const std::string number = item.substr(eq + 1);
    if (!ParseDouble(number, l.factor) || !(l.factor >= 1.0 && l.factor <= kMaxLinkSlowdown)) {
      return Status::InvalidArgument(
          fmt::format("{} '{}': factor '{}' must be a number in [1, {:g}]", key, Printable(item),
                      Printable(number), kMaxLinkSlowdown));
    }
    if (!seen.insert({std::min(l.a, l.b), std::max(l.a, l.b)}).second) {
      return Status::InvalidArgument(
          fmt::format("{} '{}': the link {}-{} is given twice; give each pair at most once", key,
                      Printable(item), l.a, l.b));
    }
    out.push_back(l);
  }
  return out;
}

std::string FormatRankSpeeds(const std::vector<double>& speeds) {
  std::string out;
  for (std::size_t r = 0; r < speeds.size(); ++r) {
    if (speeds[r] == 1.0) continue;
    out += fmt::format("{}{}={:g}", out.empty() ? "" : ",", r, speeds[r]);
  }
  return out;
}

std::string FormatMicrobatchSeqlens(const std::vector<int>& seqlens) {
  std::string out;
  for (int s : seqlens) out += fmt::format("{}{}", out.empty() ? "" : ",", s);
  return out;
}

std::string FormatLinkSlowdowns(const std::vector<LinkSlowdown>& slowdowns) {
  std::string out;
  for (const LinkSlowdown& l : slowdowns) {
    out += fmt::format("{}{}-{}={:g}", out.empty() ? "" : ",", l.a, l.b, l.factor);
  }
  return out;
}

std::string DescribeUnevenWork(const UnevenWork& work) {
  std::string out;
  auto add = [&out](std::string_view key, const std::string& value) {
    if (!value.empty()) out += fmt::format("{}{} {}", out.empty() ? "" : " ", key, value);
  };
  add("--rank-speed", FormatRankSpeeds(work.rank_speed));
  bool lengths = false;
  for (int s : work.microbatch_seqlens) lengths |= s != work.reference_seqlen;
  if (lengths) {
    add("--microbatch-seqlens", FormatMicrobatchSeqlens(work.microbatch_seqlens));
    add("--seq-len", std::to_string(work.reference_seqlen));
    add("--attention-share", fmt::format("{:g}", work.attention_share));
  }
  std::vector<LinkSlowdown> slowed;
  for (const LinkSlowdown& l : work.link_slowdowns) {
    if (l.factor != 1.0) slowed.push_back(l);
  }
  add("--link-slowdown", FormatLinkSlowdowns(slowed));
  return out;
}

std::vector<double> SeqlenRatios(const UnevenWork& work) {
  std::vector<double> ratios;
  ratios.reserve(work.microbatch_seqlens.size());
  for (int s : work.microbatch_seqlens) {
    ratios.push_back(static_cast<double>(s) / work.reference_seqlen);
  }
  return ratios;
}

Status CheckUnevenWork(const UnevenWork& work, int p, int m) {
  if (!work.rank_speed.empty()) {
    if (static_cast<int>(work.rank_speed.size()) != p) {
      return Status::InvalidArgument(
          fmt::format("--rank-speed: {} speeds for {} ranks", work.rank_speed.size(), p));
    }
    for (int r = 0; r < p; ++r) {
      const double s = work.rank_speed[r];
      if (!(s > 0.0 && s <= kMaxRankSpeed)) {
        return Status::InvalidArgument(fmt::format(
            "--rank-speed {}={}: speed must be a number in (0, {:g}]", r, s, kMaxRankSpeed));
      }
    }
  }
  if (!work.microbatch_seqlens.empty()) {
    if (static_cast<int>(work.microbatch_seqlens.size()) != m) {
      return Status::InvalidArgument(
          fmt::format("--microbatch-seqlens: {} sequence lengths for {} microbatches",
                      work.microbatch_seqlens.size(), m));
    }
    for (int mb = 0; mb < m; ++mb) {
      const int s = work.microbatch_seqlens[mb];
      if (s < 1 || s > kMaxSeqlen) {
        return Status::InvalidArgument(
            fmt::format("--microbatch-seqlens: microbatch {} has length {}: must be in [1, {}]", mb,
                        s, kMaxSeqlen));
      }
    }
    if (work.reference_seqlen < 1 || work.reference_seqlen > kMaxSeqlen) {
      return Status::InvalidArgument(fmt::format(
          "--seq-len {}: --microbatch-seqlens needs the reference sequence length the costs are "
          "for, an integer in [1, {}]",
          work.reference_seqlen, kMaxSeqlen));
    }
  }
  if (!(work.attention_share >= 0.0 && work.attention_share <= 1.0)) {
    return Status::InvalidArgument(
        fmt::format("--attention-share {}: must be a number in [0, 1]", work.attention_share));
  }
  return CheckLinkSlowdowns(work.link_slowdowns, p, "--link-slowdown");
}

double SeqlenCostFactor(int seqlen, int reference_seqlen, double attention_share) {
  const double x = static_cast<double>(seqlen) / reference_seqlen;
  return (1.0 - attention_share) * x + attention_share * x * x;
}

Result<Costs> ApplyUnevenWork(const Costs& nominal, const Placement& placement, int m,
                              const UnevenWork& work) {
  PIPETTE_RETURN_IF_ERROR(CheckPlacement(nominal, placement));
  return ApplyUnevenWork(
      [&](int seqlen) -> Result<Costs> {
        Costs scaled = nominal;
        if (seqlen == work.reference_seqlen) return scaled;
        const double k = SeqlenCostFactor(seqlen, work.reference_seqlen, work.attention_share);
        for (StageCost& c : scaled.stages) c = StageCost{c.f * k, c.i * k, c.w * k};
        for (double& b : scaled.full_backward) b *= k;
        return scaled;
      },
      placement, m, work);
}

Result<Costs> ApplyUnevenWork(const CostsAtSeqlen& costs_at, const Placement& placement, int m,
                              const UnevenWork& work) {
  PIPETTE_RETURN_IF_ERROR(CheckUnevenWork(work, placement.num_ranks(), m));
  PIPETTE_ASSIGN_OR_RETURN(const Costs reference, costs_at(work.reference_seqlen));
  PIPETTE_RETURN_IF_ERROR(CheckPlacement(reference, placement));
  StageCostSet base = ScaledSet(reference.stages, reference.full_backward, 1.0, placement, work);
  Costs out;
  out.stages = base.stages;
  out.full_backward = base.full_backward;
  out.alltoall = reference.alltoall;  // communication: neither rank speed nor length scales it
  out.overlap_alltoall = reference.overlap_alltoall;
  if (work.microbatch_seqlens.empty()) return out;
  std::map<int, int> variant_of;  // length -> index in out.variants
  out.microbatch_variant.reserve(m);
  for (int mb = 0; mb < m; ++mb) {
    const int seqlen = work.microbatch_seqlens[mb];
    auto [it, fresh] = variant_of.emplace(seqlen, static_cast<int>(out.variants.size()));
    if (fresh) {
      if (seqlen == work.reference_seqlen) {
        out.variants.push_back(base);
      } else {
        PIPETTE_ASSIGN_OR_RETURN(const Costs at, costs_at(seqlen));
        PIPETTE_RETURN_IF_ERROR(CheckPlacement(at, placement));
        out.variants.push_back(ScaledSet(at.stages, at.full_backward, 1.0, placement, work));
      }
    }
    out.microbatch_variant.push_back(it->second);
  }
  return out;
}

}  // namespace pipette
