// The uneven-work options every command that runs a schedule shares (schedule/uneven_work.h):
// --rank-speed, --microbatch-seqlens, --link-slowdown and, where the costs are given per chunk
// (--times), --seq-len (the length those costs are for) and --attention-share (the share of a
// chunk's cost that grows with s^2).
//
// Example:
//   UnevenWorkOptions uneven;
//   AddUnevenWorkOptions(cmd, uneven, /*seq_len=*/true, /*attention_share=*/true);
//   ...
//   PIPETTE_ASSIGN_OR_RETURN(UnevenWork work, ParseUnevenWorkOptions(uneven, p, m));
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "pipette/cluster/cluster_spec.h"
#include "pipette/common/status.h"
#include "pipette/model/dtype.h"
#include "pipette/schedule/uneven_work.h"

namespace pipette::cli {

struct UnevenWorkOptions {
  std::string rank_speed;          // --rank-speed "3=0.8,1=0.5"
  std::string microbatch_seqlens;  // --microbatch-seqlens "512,1024,..." or FILE
  std::string link_slowdown;       // --link-slowdown "0-1=2"
  int seq_len = 0;                 // --seq-len: the reference length (times mode)
  double attention_share = 0.0;    // --attention-share (times mode)
  std::string cluster;             // --cluster: a cluster whose GPU types set rank speeds
  CLI::Option* seq_len_option = nullptr;
  CLI::Option* attention_share_option = nullptr;
};

// The help group of the uneven-work options.
inline constexpr const char* kUnevenGroup = "Uneven work";

// Adds --rank-speed, --microbatch-seqlens and --link-slowdown to `cmd` (help group kUnevenGroup);
// with `seq_len`, also
// --seq-len (a command with a model of its own has its own), with `attention_share`,
// --attention-share (a real engine does the real work and needs none).
void AddUnevenWorkOptions(CLI::App* cmd, UnevenWorkOptions& options, bool seq_len,
                          bool attention_share);

// Adds --cluster to a command whose costs are given per chunk (`schedule`, `schedule search`): a
// cluster preset or file of mixed GPU types (node_groups) whose relative bf16 peaks become rank
// speeds (ApplyClusterSpeeds). A command with a model of its own (simulate) has its own --cluster.
void AddClusterSpeedOption(CLI::App* cmd, UnevenWorkOptions& options);

// Multiplies `work`'s rank speeds by `cluster`'s relative peaks at `dtype` (RelativeRankSpeeds:
// rank r on GPU r; the per-chunk costs are those of the cluster's [gpu]) and checks the result
// (a product above 100 is refused). A cluster of one GPU type changes nothing.
Status ApplyClusterSpeeds(const ClusterSpec& cluster, DType dtype, int p, int m, UnevenWork& work);

// Parses the options for p pipeline ranks and m microbatches into an UnevenWork whose
// reference_seqlen is `reference_seqlen` when positive (a model's --seq-len), else --seq-len.
// Errors name the option, the value and the rule (CheckUnevenWork); --attention-share without
// --microbatch-seqlens is refused (it would change nothing). With --cluster, the cluster's GPU
// types scale the rank speeds (ApplyClusterSpeeds at bf16).
Result<UnevenWork> ParseUnevenWorkOptions(const UnevenWorkOptions& options, int p, int m,
                                          int reference_seqlen = 0);

// True when any of the uneven-work options was given.
bool AnyUnevenWorkOption(const UnevenWorkOptions& options);

}  // namespace pipette::cli
