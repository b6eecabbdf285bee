// Model FLOPs and model FLOP utilisation (MFU) as llm.c and Megatron-LM count them, and the dense
// bf16 tensor-core peaks of the GPUs the CUDA engine is benchmarked on. Pure functions.
//
// The convention (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM", section 5.1; llm.c's `gpt2_estimate_mfu`): only matrix products
// count, 2 FLOPs per multiply-add; per token and per decoder block the forward pass costs
//   attention projections  2 h (h + 2 h_kv)   (Q, K, V; h_kv = kv_heads * head_dim; = 6 h^2 for
//   MHA)
//                          + 2 h^2             (the output projection)
//   attention core         + 4 s h             (Q K^T and P V over the whole s x s square: no
//                                               discount for the causal mask)
//   MLP                    + 4 h f             (GELU: up and down) or 6 h f (SwiGLU: gate, up,
//   down)
// = 24 h^2 + 4 s h for GPT (MHA, f = 4 h); the LM head 2 h V per token; the backward pass twice
// the forward (input gradient + weight gradient), so a training step costs 3x the forward. Summed
// over B s tokens and l blocks this is Megatron's 72 B s l h^2 (1 + s / (6 h) + V / (12 h l)).
// Norms, activations, softmax, embeddings and the optimizer count nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "pipette/model/decoder.h"

namespace pipette {

// Forward FLOPs per token of one decoder block of `spec` at sequence length `seq`.
double BlockForwardFlopsPerToken(const DecoderSpec& spec, int seq);
// Forward FLOPs per token of the attention core alone (Q K^T and P V): 4 s h, h = heads * head_dim.
double AttentionCoreForwardFlopsPerToken(const DecoderSpec& spec, int seq);
// Forward FLOPs per token of the LM head: 2 h V.
double HeadForwardFlopsPerToken(const DecoderSpec& spec);

// One microbatch of `tokens` tokens through `blocks` decoder blocks (with the head when
// `with_head`): the forward's FLOPs, the backward's (2x) and their sum, F + B = F + I + W.
struct PassFlops {
  double forward = 0;
  double backward = 0;
  double total() const { return forward + backward; }
};
PassFlops StageFlops(const DecoderSpec& spec, int seq, double tokens, int blocks, bool with_head);

// A whole training step of the model (every block and the head) over `tokens` tokens.
double ModelStepFlops(const DecoderSpec& spec, int seq, double tokens);

// A GPU's dense (no sparsity) bf16 tensor-core peak and where the number comes from.
struct DevicePeak {
  std::string device;  // the product the name was matched to ("H100 SXM5")
  double bf16_tflops = 0;
  std::string source;
};
// The peak of the device CUDA names `device_name` ("NVIDIA H100 80GB HBM3"), or nullopt when it is
// not in the table (MFU is then unknown, not guessed). Known: H100 SXM (989.4), H100 PCIe (756),
// H200 SXM (989.4).
std::optional<DevicePeak> DenseBf16Peak(std::string_view device_name);

// Model FLOP utilisation: flops / seconds / (peak_tflops * 1e12). 0 for seconds <= 0.
double Mfu(double flops, double seconds, double peak_tflops);

}  // namespace pipette
