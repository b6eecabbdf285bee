#include "cli/train_options.h"

#include "cli/option_checks.h"

namespace pipette::cli {

void AddTrainOptions(CLI::App* cmd, const std::shared_ptr<TrainCommandOptions>& o) {
  cmd->add_option("--engine", o->engine,
                  "Execution engine: cpu (OpenBLAS, one MPI process per rank) or cuda (cuBLASLt "
                  "and own kernels, NCCL between GPUs; pipette --version says if it is built)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  TrainOptions& t = o->train;
  cmd->add_option("--model", t.model,
                  "tiny, tiny-tied, tiny-llama, tiny-llama-tied, a GPT- or Llama-style decoder "
                  "preset (pipette models) or a model file (.toml) that is a GPT- or Llama-style "
                  "decoder chain")
      ->capture_default_str()
      ->check(NonEmpty());
  cmd->add_option("--schedule", t.schedule, "Schedule name (pipette schedule --list) or csv:FILE")
      ->capture_default_str()
      ->check(NonEmpty());
  o->p_option = cmd->add_option("-p,--pp", t.p, "Pipeline ranks (csv:FILE: the file's)")
                    ->capture_default_str();
  cmd->add_option("-v", t.v, "Stages per rank (0: the schedule's default)")->capture_default_str();
  cmd->add_option("--dp", t.dp, "Data-parallel replicas")->capture_default_str();
  o->m_option = cmd->add_option("-m,--microbatches", t.m,
                                "Microbatches per step (csv:FILE: the "
                                "file's)")
                    ->capture_default_str();
  cmd->add_option("--steps", t.steps, "Training steps")->capture_default_str();
  cmd->add_option("--micro-batch-size", t.micro_batch_size, "Sequences per microbatch")
      ->capture_default_str();
  cmd->add_option("--seq-len", t.seq_len, "Tokens per sequence (0: the model's context)")
      ->capture_default_str();
  cmd->add_option("--seed", t.seed, "Seed of the initial weights")
      ->capture_default_str()
      ->check(UnsignedDecimal());
  cmd->add_option("--lr", t.lr, "AdamW learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", t.weight_decay, "AdamW decoupled weight decay (matrices)")
      ->capture_default_str();
  CLI::Option* verify =
      cmd->add_flag("--verify", t.verify,
                    "Rank 0 also trains the unpipelined reference and compares gradients (step 1) "
                    "and parameters (end); exit 1 beyond --tolerance");
  cmd->add_option("--tolerance", o->tolerance, "Relative error --verify accepts")
      ->capture_default_str()
      ->needs(verify);
  o->trace_steps_option =
      cmd->add_option("--trace-steps", t.trace_steps,
                      "Steps whose every instruction is recorded (the first ones; losses and step "
                      "times cover all steps; not with --trace none)")
          ->capture_default_str();
  cmd->add_option("--peer-timeout", t.peer_timeout_s,
                  "Seconds a rank waits on a peer before it ends the run")
      ->capture_default_str();
  cmd->add_option("--dtype", t.dtype,
                  "GEMM precision: fp32, or bf16 (cuda: bf16 operands, fp32 accumulation and "
                  "master weights)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_flag("--virtual-ranks", t.virtual_ranks,
                "cuda: run every pipeline rank in this one process on one GPU (no mpirun; "
                "--dp 1), transfers as device-to-device copies")
      ->capture_default_str();
  cmd->add_option("--rank-speed", t.rank_speed,
                  "Slowed pipeline ranks, e.g. 1=0.5: each compute of rank 1 is followed by a busy "
                  "wait as long again (speed in (0, 1] slows; unlisted ranks 1)")
      ->check(NonEmpty());
  cmd->add_option("--microbatch-seqlens", t.microbatch_seqlens,
                  "Sequence length of each microbatch (m of them, each at most --seq-len): a list "
                  "512,256,... or a file of them; the step's loss is the mean over its tokens")
      ->check(NonEmpty());
  cmd->add_option("--format", o->format, "Output format")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--quiet", o->quiet,
                "No progress line on the terminal (world rank 0, past 2 s: steps done, time left)");
  AddRecordOptions(cmd, o->record);
}

void AddTrainSubcommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train for real, one MPI process per rank: mpirun -np P*D pipette train ... (pipette train "
      "--help lists its options)");
  // The options' values outlive the parse: CLI11 binds them by reference.
  static const auto unused = std::make_shared<TrainCommandOptions>();
  AddTrainOptions(cmd, unused);
}

}  // namespace pipette::cli
