#include "cli/simulate_options.h"

#include "cli/option_checks.h"

namespace pipette::cli {
namespace {

// The model path's parallelism: nodes, dp, tp, the rank-to-GPU order, expert parallelism.
void AddParallelismOptions(CLI::App* cmd, SimulateOptions& o) {
  cmd->add_option("--nodes", o.nodes, "Nodes (0 or left out: the cluster's)")->group(kModelGroup);
  cmd->add_option("--dp", o.dp, "Data-parallel replicas")
      ->capture_default_str()
      ->group(kModelGroup);
  cmd->add_option("--tp", o.tp, "Tensor-parallel ranks per stage")
      ->capture_default_str()
      ->group(kModelGroup);
  cmd->add_option("--placement-order", o.placement_order,
                  "Rank-to-GPU order, innermost first: tp,pp,dp (replicas outermost) or tp,dp,pp "
                  "(data-parallel innermost)")
      ->capture_default_str()
      ->group(kModelGroup);
  cmd->add_option("--ep", o.ep,
                  "Expert-parallel GPUs (MoE models): experts sharded over ep of the dp replicas; "
                  "must divide --dp and the experts")
      ->capture_default_str()
      ->group(kModelGroup);
  cmd->add_flag("--no-alltoall-overlap", o.no_alltoall_overlap,
                "MoE: overlapped (F;B) cells run compute and all-to-all serially (default: "
                "DualPipe's overlap, max(compute, all-to-all))")
      ->group(kModelGroup);
}

// The model path's data-parallel gradient reduction.
void AddGradientOptions(CLI::App* cmd, SimulateOptions& o) {
  o.grad_reduce_option =
      cmd->add_option(
             "--grad-reduce", o.grad_reduce,
             "Data-parallel gradient reduction: ring or tree (simulated traffic; default ring on a "
             "cluster) or analytic (default on the ideal network)")
          ->group(kModelGroup);
  o.grad_overlap_option =
      cmd->add_flag("--grad-overlap", o.grad_overlap,
                    "Start each stage's gradient buckets when its last backward ends (Megatron's "
                    "overlap_grad_reduce) instead of after the program")
          ->group(kModelGroup);
  o.grad_bucket_option =
      cmd->add_option(
             "--grad-bucket-params", o.grad_bucket_params,
             "Parameters per gradient bucket (0 or left out: Megatron's max(40M, 1M x dp))")
          ->group(kModelGroup);
}

// The program: the schedule, its shape or --times, the network the messages cross, the steps.
void AddProgramOptions(CLI::App* cmd, SimulateOptions& o) {
  cmd->add_option("--schedule", o.schedule, "Schedule name or csv:FILE")
      ->capture_default_str()
      ->check(NonEmpty())
      ->group(kProgramGroup);
  o.p_option = cmd->add_option("-p,--pp", o.params.p, "Pipeline ranks (csv:FILE: the file's)")
                   ->capture_default_str()
                   ->group(kProgramGroup);
  cmd->add_option("-v,--chunks", o.params.v, "Stages per rank (default: the schedule's)")
      ->group(kProgramGroup);
  o.m_option =
      cmd->add_option("-m,--microbatches", o.params.m, "Microbatches (csv:FILE: the file's)")
          ->capture_default_str()
          ->group(kProgramGroup);
  o.times_option =
      cmd->add_option("--times", o.times,
                      "Per-chunk times in ms, F=..,I=..,W=.. (B = I+W): bypasses the model")
          ->check(NonEmpty())
          ->group(kProgramGroup);
  cmd->add_flag("--ideal-network", o.ideal_network,
                "Unbounded bandwidth; every message takes --latency-us")
      ->group(kProgramGroup);
  cmd->add_flag("--every-replica", o.every_replica, "Simulate every replica, even alike ones")
      ->group(kProgramGroup);
  o.latency_option = cmd->add_option("--latency-us", o.latency_us,
                                     "Per-message latency (microseconds; with --ideal-network)")
                         ->capture_default_str()
                         ->group(kProgramGroup);
  cmd->add_option("--steps", o.steps, "Training steps, back to back")
      ->capture_default_str()
      ->check(InRange(1, 1000, "steps repeat identically; the simulated time is what grows"))
      ->group(kProgramGroup);
}

// The model, the cluster and how the model is laid out on it.
void AddModelOptions(CLI::App* cmd, SimulateOptions& o) {
  cmd->add_option("--model", o.model, "Model preset or .toml")
      ->capture_default_str()
      ->check(NonEmpty())
      ->group(kModelGroup);
  o.cluster_option = cmd->add_option("--cluster", o.cluster, "Cluster preset or .toml")
                         ->capture_default_str()
                         ->check(NonEmpty())
                         ->group(kModelGroup);
  AddParallelismOptions(cmd, o);
  cmd->add_option("--micro-batch-size", o.micro_batch_size, "Sequences per microbatch")
      ->capture_default_str()
      ->group(kModelGroup);
  o.seq_len_option =
      cmd->add_option("--seq-len", o.seq_len,
                      "Tokens per sequence (with --times and --microbatch-seqlens: the length the "
                      "times are for)")
          ->capture_default_str()
          ->group(kModelGroup);
  cmd->add_option("--dtype", o.dtype, "fp32, bf16, fp16 or fp8")
      ->capture_default_str()
      ->check(NonEmpty())
      ->group(kModelGroup);
  cmd->add_option("--zero", o.zero, "ZeRO stage 0-3")->capture_default_str()->group(kModelGroup);
  cmd->add_flag("--recompute", o.recompute, "Full activation recomputation")->group(kModelGroup);
  cmd->add_option("--efficiency", o.efficiency, "Achieved fraction of peak FLOP/s")
      ->capture_default_str()
      ->group(kModelGroup);
  AddGradientOptions(cmd, o);
}

// --costs-from RUN and what applies only with it.
void AddPredictionOptions(CLI::App* cmd, SimulateOptions& o) {
  o.costs_from_option =
      cmd->add_option("--costs-from", o.costs_from,
                      "Predict recorded real run RUN (in --db): its program and measured costs; "
                      "the program, model and cluster options are the run's")
          ->group(kPredictionGroup);
  o.cores_option =
      cmd->add_option("--cores", o.cores,
                      "With --costs-from: share N cores among the ranks' compute (default 0: a "
                      "core each; the measured durations already include the run's own "
                      "sharing)")
          ->check(InRange(0, 1024, "0: every rank its own core"))
          ->group(kPredictionGroup);
  cmd->add_flag("--alone-costs", o.alone_costs,
                "With --costs-from and --cores N: cost each compute as it ran alone, the run's "
                "sharing of N cores taken out (processor sharing), so the simulation's sharing "
                "is not counted twice; --cores 1 for a --virtual-ranks run on one GPU")
      ->group(kPredictionGroup);
  cmd->add_option("--cost-statistic", o.cost_statistic,
                  "With --costs-from: median (default) or mean of the run's durations")
      ->capture_default_str()
      ->check(CLI::IsMember({"median", "mean"}))
      ->needs(o.costs_from_option)
      ->group(kPredictionGroup);
  o.calibration_option =
      cmd->add_option(
             "--calibration", o.calibration,
             "With --costs-from or --fit: apply calibration ID (pipette calibrations) or 'latest' "
             "of this host")
          ->group(kPredictionGroup);
  o.fit_option =
      cmd->add_option("--fit", o.fit,
                      "Price the engine's plan of --model, --schedule, -p, -v, -m, "
                      "--dp, --micro-batch-size, --seq-len with fit ID (pipette fits) or "
                      "'latest'; with --costs-from RUN: RUN's configuration")
          ->group(kPredictionGroup);
}

}  // namespace

void AddSimulateOptions(CLI::App* cmd, SimulateOptions& o) {
  o.command = cmd;
  AddProgramOptions(cmd, o);
  AddModelOptions(cmd, o);
  // --times bypasses the model: what only the model uses would be taken silently. (--cluster stays:
  // a cluster of mixed GPU types scales the times; --seq-len is checked with --microbatch-seqlens.)
  for (const char* model_only :
       {"--model", "--dtype", "--efficiency", "--zero", "--recompute", "--micro-batch-size"}) {
    o.times_option->excludes(cmd->get_option(model_only));
  }
  AddUnevenWorkOptions(cmd, o.uneven, /*seq_len=*/false, /*attention_share=*/true);
  AddPredictionOptions(cmd, o);
  cmd->add_option("--format", o.format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}))
      ->group(kOutputGroup);
  cmd->add_flag("--quiet", o.quiet,
                "No progress line on the terminal (shown past 2 s while the simulation runs)")
      ->group(kOutputGroup);
  AddRecordOptions(cmd, o.record);
}

}  // namespace pipette::cli
