// Uneven work: stragglers (per-rank speed factors), slow links (per rank-pair latency factors) and
// variable-length microbatches (a sequence length per microbatch), as inputs to every consumer of
// a schedule (evaluate, simulate, schedule search, the CPU engine).
//
// The model:
//   - a compute on pipeline rank r takes nominal / rank_speed[r] (speed 0.5: twice as long);
//   - a microbatch of sequence length s costs, per chunk, its cost at the reference length s0
//     times SeqlenCostFactor(s, s0, attention_share) = (1 - a) * s/s0 + a * (s/s0)^2, where a is
//     the share of the chunk's cost at s0 that grows with s^2 (attention); the cost model (model
//     mode) instead prices each distinct length itself (ApplyUnevenWork with a CostsAtSeqlen);
//   - a message between pipeline ranks a and b takes `factor` times as long (evaluate: the p2p
//     latency x factor; simulate: the pair's route has its bandwidth / factor, latency x factor).
//
// ApplyUnevenWork() turns nominal costs into Costs that carry the microbatch lengths (one cost set
// per distinct length) and the rank speeds (folded per stage through the placement), so anything
// that calls Costs::Of() (Evaluate, the simulator) sees uneven work with no other change. Link
// slowdowns go to EvaluateOptions::link_slowdowns (and the simulator's platform).
//
// Example:
//   UnevenWork work;
//   PIPETTE_ASSIGN_OR_RETURN(work.rank_speed, ParseRankSpeeds("3=0.8", p));
//   PIPETTE_ASSIGN_OR_RETURN(work.microbatch_seqlens, ParseMicrobatchSeqlens("512,2048", m));
//   work.reference_seqlen = 1024;
//   work.attention_share = 0.3;
//   PIPETTE_ASSIGN_OR_RETURN(Costs costs, ApplyUnevenWork(nominal, schedule.placement, m, work));
//   EvaluateOptions options;
//   options.link_slowdowns = work.link_slowdowns;
//   PIPETTE_ASSIGN_OR_RETURN(Evaluation e, Evaluate(program, costs, options));
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/schedule/costs.h"
#include "pipette/schedule/placement.h"

namespace pipette {

// Bounds of the inputs.
inline constexpr double kMaxRankSpeed = 100.0;
inline constexpr double kMaxLinkSlowdown = 1000.0;
inline constexpr int kMaxSeqlen = 1 << 24;

struct LinkSlowdown {  // unordered pipeline-rank pair
  int a = 0;
  int b = 0;
  double factor = 1.0;
  friend bool operator==(const LinkSlowdown&, const LinkSlowdown&) = default;
};

struct UnevenWork {
  std::vector<double> rank_speed;       // per pipeline rank (size p) or empty = every rank 1.0;
                                        // a compute on rank r takes nominal / rank_speed[r]
  std::vector<int> microbatch_seqlens;  // per microbatch (size m) or empty = all at the reference
  int reference_seqlen = 0;             // the sequence length the nominal costs are for
  std::vector<LinkSlowdown> link_slowdowns;  // messages between a and b take `factor` x as long
  // Added to the frozen set: in --times mode, the share in [0, 1] of a chunk's cost at the
  // reference length that grows with s^2 (attention); the rest grows with s. Model mode ignores it.
  double attention_share = 0.0;

  // True when nothing is uneven: every rank at speed 1, every microbatch at the reference length
  // (or no lengths given), no link slowed.
  bool IsEven() const;
  // The speed of rank r (1 when rank_speed is empty).
  double SpeedOf(int r) const { return rank_speed.empty() ? 1.0 : rank_speed[r]; }
  // The sequence length of microbatch mb (reference_seqlen when none are given).
  int SeqlenOf(int mb) const {
    return microbatch_seqlens.empty() ? reference_seqlen : microbatch_seqlens[mb];
  }
};

// The slowdown factor of every rank pair (unordered) that `slowdowns` lists, looked up in O(1):
// the product when a pair is listed more than once, 1 for a pair not listed. Its memory grows with
// the slowdowns, not with p (evaluate, the search and the simulator all look messages up in it).
class LinkFactors {
 public:
  LinkFactors() = default;
  explicit LinkFactors(const std::vector<LinkSlowdown>& slowdowns);

  bool empty() const { return factor_.empty(); }
  // The factor by which messages between ranks a and b take longer.
  double operator()(int a, int b) const;

 private:
  static std::uint64_t Key(int a, int b);
  std::unordered_map<std::uint64_t, double> factor_;
};

// Returns OK when every slowdown fits p ranks: a != b, both in [0, p), factor in
// [1, kMaxLinkSlowdown]; otherwise InvalidArgument "KEY A-B=F: <the rule>".
Status CheckLinkSlowdowns(const std::vector<LinkSlowdown>& slowdowns, int p, std::string_view key);

// "3=0.8,1=0.5": speeds in (0, 100], ranks in [0, p), each rank at most once -> vector of size p
// (unlisted ranks 1.0). An empty text gives an empty vector (every rank at 1.0).
Result<std::vector<double>> ParseRankSpeeds(std::string_view text, int p,
                                            std::string_view key = "--rank-speed");
// "512,1024,2048,..." (exactly m positive integers, each at most kMaxSeqlen) or the path of a file
// holding them (separated by commas, spaces or newlines; '#' starts a comment to the end of the
// line) -> vector of size m. Text made only of digits, commas and blanks is a list; anything else
// is a path. An empty text gives an empty vector (every microbatch at the reference length).
Result<std::vector<int>> ParseMicrobatchSeqlens(std::string_view list_or_file, int m,
                                                std::string_view key = "--microbatch-seqlens");
// "0-1=2,2-3=1.5": factor in [1, 1000], a != b, both in [0, p), each unordered pair at most once.
// An empty text gives an empty vector.
Result<std::vector<LinkSlowdown>> ParseLinkSlowdowns(std::string_view text, int p,
                                                     std::string_view key = "--link-slowdown");

// Writes the inputs back in the parsers' syntax (for run records and messages): "3=0.8,1=0.5"
// (only ranks not at 1), "512,1024", "0-1=2". Empty when there is nothing to write.
std::string FormatRankSpeeds(const std::vector<double>& speeds);
std::string FormatMicrobatchSeqlens(const std::vector<int>& seqlens);
std::string FormatLinkSlowdowns(const std::vector<LinkSlowdown>& slowdowns);

// Describes `work` as the options that give it: "--rank-speed 3=0.8 --microbatch-seqlens
// 512,2048 --seq-len 1024 --attention-share 0.5 --link-slowdown 0-1=2" (only what is uneven;
// empty when IsEven()).
std::string DescribeUnevenWork(const UnevenWork& work);

// Per microbatch, its length over the reference length (message sizes grow with it); empty when
// no lengths are given.
std::vector<double> SeqlenRatios(const UnevenWork& work);

// Returns OK when `work` fits p ranks and m microbatches: sizes, ranges, attention_share in
// [0, 1], and a positive reference_seqlen whenever microbatch_seqlens is given. Errors name the
// option (--rank-speed, --microbatch-seqlens, --seq-len, --attention-share, --link-slowdown).
Status CheckUnevenWork(const UnevenWork& work, int p, int m);

// (1 - a) * s/s0 + a * (s/s0)^2: the cost of a chunk at length s over its cost at s0.
// REQUIRES: s0 > 0.
double SeqlenCostFactor(int seqlen, int reference_seqlen, double attention_share);

// Returns `nominal` (speed-1 costs at the reference length; microbatch_variant must be empty) with
// uneven work applied: every distinct microbatch length gets a cost set scaled by
// SeqlenCostFactor(s, reference_seqlen, attention_share) (F, I, W and a measured full backward
// alike), and every stage's costs in every set are divided by the speed of the rank that holds it.
// Errors: CheckUnevenWork's, a placement that does not match nominal's stages.
Result<Costs> ApplyUnevenWork(const Costs& nominal, const Placement& placement, int m,
                              const UnevenWork& work);

// Model mode: the nominal (speed-1) costs of every stage at one sequence length.
using CostsAtSeqlen = std::function<Result<Costs>(int seqlen)>;
// The same with each distinct length priced by `costs_at` (called once per distinct length, and
// once for reference_seqlen, which gives the returned Costs::stages).
Result<Costs> ApplyUnevenWork(const CostsAtSeqlen& costs_at, const Placement& placement, int m,
                              const UnevenWork& work);

}  // namespace pipette
