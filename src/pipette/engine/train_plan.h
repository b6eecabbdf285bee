// TrainPlan: everything every rank of a real training run (CPU or CUDA engine) derives,
// identically, from the options: the model, the schedule and its lowered program, and the cut of
// the model into pieces.
//
// A piece is a run of consecutive model layers (partitioned by FLOPs with the balanced
// partitioner). Usually piece k is stage k. A schedule whose microbatches take different routes
// (DualPipe: half the microbatches pass stages 0..p-1, half p..2p-1) holds the model twice:
// stage s of route R is piece s - R.first, so each piece has two copies, on two ranks, whose
// gradients are summed after every step (like a tied embedding). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/corpus.h"
#include "pipette/model/decoder.h"
#include "pipette/schedule/program.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

struct TrainOptions {
  std::string model = "tiny";  // "tiny", "tiny-llama", another GPT- or Llama-style preset, a .toml
  std::string schedule = "1f1b";
  int p = 1;
  int v = 0;  // 0: the schedule's default
  int m = 8;
  int dp = 1;
  int steps = 20;
  int micro_batch_size = 4;
  // 0: the model's context (max_positions). A RoPE model's max_positions is its context length
  // (no table): the default and the bound; a RoPE model without one needs --seq-len.
  int seq_len = 0;
  std::uint64_t seed = 1;
  double lr = 3e-3;
  double weight_decay = 0.1;
  double peer_timeout_s = 300;  // a rank waiting longer than this on a peer ends the run
  int trace_steps = 20;         // steps whose instructions are traced (the first ones)
  bool verify = false;          // compare with the unpipelined reference (rank 0)
  std::string dtype = "fp32";   // GEMM precision: fp32, or bf16 (cuda engine: bf16 operands,
                                // fp32 accumulation and fp32 master weights)
  bool virtual_ranks = false;   // cuda engine: every rank in this process, on one GPU
  // Uneven work (schedule/uneven_work.h), as given on the command line; empty: even.
  // --rank-speed "1=0.5": pipeline rank 1 at half speed (every compute is followed by a busy wait
  // of (1/speed - 1) times its own CPU time). --microbatch-seqlens: m sequence lengths, a list or
  // a file; microbatch i's sequences hold s_i tokens (at most seq_len).
  std::string rank_speed;
  std::string microbatch_seqlens;
};

struct TrainPlan {
  DecoderSpec spec;
  int micro_batch_size = 0;
  int seq_len = 0;
  int dp = 1;
  Schedule schedule;
  Program program;
  std::vector<std::vector<std::string>> piece_layers;  // layer names per piece, in model order
  std::vector<int> stage_piece;                        // the piece each stage runs
  std::vector<int> stage_output_cols;  // columns of each stage's output (rows: tokens)
  // Per piece, from the model graph (fp32): parameters, and bytes held per microbatch in flight
  // (activations kept for the backward; inputs of the weight GEMMs kept from I to W).
  std::vector<std::int64_t> piece_params;
  std::vector<std::int64_t> piece_activation_bytes;
  std::vector<std::int64_t> piece_wgrad_input_bytes;
  // Uneven work: the speed of every pipeline rank (size p, 1 = full speed) and the sequence length
  // of every microbatch (size m; all seq_len unless --microbatch-seqlens gives others).
  std::vector<double> rank_speed;
  std::vector<int> microbatch_seqlens;

  int p() const { return program.p; }
  int m() const { return program.m; }
  int world_size() const { return program.p * dp; }
  // Tokens of a microbatch at the longest length, seq_len (buffers, memory estimates).
  int tokens_per_microbatch() const { return micro_batch_size * seq_len; }
  // Sequence length and tokens of microbatch `mb`.
  int seq_len_of(int mb) const {
    return microbatch_seqlens.empty() ? seq_len : microbatch_seqlens[mb];
  }
  int tokens_of(int mb) const { return micro_batch_size * seq_len_of(mb); }
  // Sequences and tokens of one step over all replicas.
  std::int64_t sequences_per_step() const {
    return static_cast<std::int64_t>(micro_batch_size) * program.m * dp;
  }
  std::int64_t tokens_per_step() const;
  // True when some microbatch is shorter than seq_len, or some rank slower or faster than 1.
  bool variable_seqlens() const;
  bool uneven_speed() const;
  // The weight of microbatch mb's mean loss in the step's per-token mean loss, relative to a
  // microbatch at seq_len: seq_len_of(mb) / seq_len (exactly 1 when the lengths are even). The
  // step's loss is sum(weight * mean) / (dp * sum(weight)) = the mean over the step's tokens.
  double loss_weight(int mb) const;
  double loss_weight_per_step() const;  // dp * the sum of loss_weight over the microbatches
};

// OK when the real engines implement `spec`'s architecture: a GPT-style decoder (learned
// positions, LayerNorm with biases, GELU MLP, heads == kv_heads) or a Llama-style one (RoPE with
// an even head width, RMSNorm without biases, SwiGLU MLP, kv_heads dividing heads). Otherwise
// InvalidArgument naming the model and what it mixes or lacks.
Status CheckTrainable(const DecoderSpec& spec);

// Resolves `options.model` to a trainable decoder spec: a GPT- or Llama-style preset of the model
// layer (model/model_presets.h; among them the CPU engine's own "tiny" and "tiny-tied", tiny with
// the LM head tied to the token embedding, and "tiny-llama", "tiny-llama-tied"), or a model file
// (.toml, read by the model layer) whose graph is a GPT- or Llama-style decoder chain
// (decoder_from_graph.h); InvalidArgument or NotFound naming --model otherwise.
Result<DecoderSpec> ResolveTrainModel(const std::string& model);

// OK for a --peer-timeout in [0.1, 1e6] seconds; InvalidArgument naming it otherwise. PlanTraining
// checks it, and the CLI before a watchdog runs on it (1e-320 s would end MPI_Init itself).
Status CheckPeerTimeout(double seconds);

// The batch of `sequences` sequences of the corpus starting at `first`, `seq` tokens each (0:
// plan.seq_len; a shorter sequence is the prefix of the longer one), each token's loss weighted
// for a whole step (1 / plan.tokens_per_step(), the tokens of all replicas' microbatches).
Batch StepBatch(const TrainPlan& plan, std::int64_t first, int sequences, int seq = 0);
// Microbatch `microbatch` of replica `replica` in training step `step` (from 0): every engine and
// the unpipelined reference read the same sequences, plan.seq_len_of(microbatch) tokens each.
Batch MicrobatchOf(const TrainPlan& plan, int step, int replica, int microbatch);

// Builds the plan; errors name the option, the value and the rule.
Result<TrainPlan> PlanTraining(const TrainOptions& options);

}  // namespace pipette
