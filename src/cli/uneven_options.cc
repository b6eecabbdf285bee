#include "cli/uneven_options.h"

#include <fmt/core.h>

#include "pipette/cluster/cluster_registry.h"

namespace pipette::cli {

void AddUnevenWorkOptions(CLI::App* cmd, UnevenWorkOptions& o, bool seq_len, bool attention_share) {
  cmd->add_option("--rank-speed", o.rank_speed,
                  "Per-rank speed factors RANK=SPEED,... in (0, 100]: a compute on that rank "
                  "takes nominal / SPEED (e.g. 3=0.8)")
      ->group(kUnevenGroup);
  cmd->add_option("--microbatch-seqlens", o.microbatch_seqlens,
                  "Sequence length of every microbatch: a list 512,1024,... or a FILE of them")
      ->group(kUnevenGroup);
  cmd->add_option("--link-slowdown", o.link_slowdown,
                  "Slow links A-B=FACTOR,... in [1, 1000]: messages between pipeline ranks A and B "
                  "take FACTOR times as long")
      ->group(kUnevenGroup);
  if (seq_len) {
    o.seq_len_option =
        cmd->add_option("--seq-len", o.seq_len,
                        "With --microbatch-seqlens: the sequence length the --times costs are for")
            ->group(kUnevenGroup);
  }
  if (!attention_share) return;
  o.attention_share_option =
      cmd->add_option("--attention-share", o.attention_share,
                      "With --microbatch-seqlens: share in [0, 1] of a chunk's cost that grows "
                      "with the square of the sequence length (the rest grows linearly)")
          ->capture_default_str()
          ->group(kUnevenGroup);
}

void AddClusterSpeedOption(CLI::App* cmd, UnevenWorkOptions& o) {
  cmd->add_option("--cluster", o.cluster,
                  "Cluster preset or .toml of mixed GPU types ([[node_groups]]): rank r runs on "
                  "GPU r at its bf16 peak over the [gpu]'s, times its --rank-speed")
      ->group(kUnevenGroup);
}

Status ApplyClusterSpeeds(const ClusterSpec& cluster, DType dtype, int p, int m, UnevenWork& work) {
  if (cluster.node_groups.empty()) return Status::Ok();
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<double> speeds, RelativeRankSpeeds(cluster, dtype, p));
  if (work.rank_speed.empty()) work.rank_speed.assign(p, 1.0);
  for (int r = 0; r < p; ++r) work.rank_speed[r] *= speeds[r];
  return CheckUnevenWork(work, p, m);
}

bool AnyUnevenWorkOption(const UnevenWorkOptions& o) {
  return !o.rank_speed.empty() || !o.microbatch_seqlens.empty() || !o.link_slowdown.empty() ||
         (o.seq_len_option != nullptr && o.seq_len_option->count() > 0) ||
         (o.attention_share_option != nullptr && o.attention_share_option->count() > 0);
}

Result<UnevenWork> ParseUnevenWorkOptions(const UnevenWorkOptions& o, int p, int m,
                                          int reference_seqlen) {
  UnevenWork work;
  PIPETTE_ASSIGN_OR_RETURN(work.rank_speed, ParseRankSpeeds(o.rank_speed, p));
  PIPETTE_ASSIGN_OR_RETURN(work.microbatch_seqlens,
                           ParseMicrobatchSeqlens(o.microbatch_seqlens, m));
  PIPETTE_ASSIGN_OR_RETURN(work.link_slowdowns, ParseLinkSlowdowns(o.link_slowdown, p));
  const bool seq_len_given = o.seq_len_option != nullptr && o.seq_len_option->count() > 0;
  work.reference_seqlen = reference_seqlen > 0 ? reference_seqlen : o.seq_len;
  work.attention_share = o.attention_share;
  if (work.microbatch_seqlens.empty()) {
    if (seq_len_given && reference_seqlen <= 0) {
      return Status::InvalidArgument(fmt::format(
          "--seq-len = {}: applies only with --microbatch-seqlens (the length the --times costs "
          "are for)",
          o.seq_len));
    }
    if (o.attention_share_option != nullptr && o.attention_share_option->count() > 0) {
      return Status::InvalidArgument(fmt::format(
          "--attention-share = {:g}: applies only with --microbatch-seqlens", o.attention_share));
    }
  } else if (reference_seqlen <= 0 && !seq_len_given) {
    return Status::InvalidArgument(
        "--microbatch-seqlens needs --seq-len, the sequence length the --times costs are for");
  }
  PIPETTE_RETURN_IF_ERROR(CheckUnevenWork(work, p, m));
  if (!o.cluster.empty()) {
    PIPETTE_ASSIGN_OR_RETURN(const ClusterSpec cluster, MakeCluster(o.cluster, 0));
    PIPETTE_RETURN_IF_ERROR(ApplyClusterSpeeds(cluster, DType::kBF16, p, m, work));
  }
  return work;
}

}  // namespace pipette::cli
