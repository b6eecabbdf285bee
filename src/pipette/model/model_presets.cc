#include "pipette/model/model_presets.h"

#include <array>

namespace pipette {
namespace {

// GPT-2 (Radford et al. 2019) and GPT-3 (Brown et al. 2020): learned positions, LayerNorm and
// biases, GELU MLP of 4h, the LM head tied to the token embedding, vocab 50257.
DecoderSpec Gpt(std::string name, int layers, int hidden, int heads, int context,
                std::int64_t published, std::string source) {
  return DecoderSpec{.name = std::move(name),
                     .layers = layers,
                     .hidden = hidden,
                     .heads = heads,
                     .kv_heads = heads,
                     .ffn_hidden = 4 * hidden,
                     .vocab = 50257,
                     .tied_embeddings = true,
                     .gated_mlp = false,
                     .bias = true,
                     .published_params = published,
                     .source = std::move(source),
                     .learned_positions = true,
                     .max_positions = context};
}

// Llama 2/3 (Touvron et al. 2023; Meta 2024): RoPE, RMSNorm, no biases, SwiGLU MLP.
DecoderSpec Llama(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn,
                  int vocab, bool tied, std::int64_t published, std::string source) {
  return DecoderSpec{.name = std::move(name),
                     .layers = layers,
                     .hidden = hidden,
                     .heads = heads,
                     .kv_heads = kv_heads,
                     .ffn_hidden = ffn,
                     .vocab = vocab,
                     .tied_embeddings = tied,
                     .gated_mlp = true,
                     .bias = false,
                     .published_params = published,
                     .source = std::move(source)};
}

DecoderSpec Llama32_1B() {
  return Llama("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256, true, 1'240'000'000,
               "HF meta-llama/Llama-3.2-1B config.json (16 layers, 2048, 32 heads, 8 kv heads, "
               "ffn 8192, vocab 128256, tied); 1.24B params (checkpoint: 1,235,814,400)");
}

// The CPU engine's own models (backends/cpu): a GPT-style decoder small enough that a training
// step takes milliseconds on one core, with or without GPT-2's tied LM head. pipette's design, so
// no published count.
DecoderSpec TinyGpt(std::string name, bool tied) {
  return DecoderSpec{.name = std::move(name),
                     .layers = 4,
                     .hidden = 64,
                     .heads = 4,
                     .kv_heads = 4,
                     .ffn_hidden = 256,
                     .vocab = 64,
                     .tied_embeddings = tied,
                     .gated_mlp = false,
                     .bias = true,
                     .published_params = 0,
                     .source = tied ? "pipette's CPU engine test model, LM head tied to the token "
                                      "embedding (backends/cpu/README.md)"
                                    : "pipette's CPU engine test model, the default of pipette "
                                      "train (backends/cpu/README.md)",
                     .learned_positions = true,
                     .max_positions = 32};
}

// The CPU engine's Llama-style model: tiny's shape with RoPE, RMSNorm, no biases, a SwiGLU MLP of
// 128 and two KV heads for the four query heads. RoPE has no position table: max_positions is the
// context length (the default and the limit of pipette train's --seq-len). pipette's design.
DecoderSpec TinyLlama(std::string name, bool tied) {
  DecoderSpec spec = Llama(std::move(name), 4, 64, 4, 2, 128, 64, tied, 0,
                           tied ? "pipette's CPU engine Llama-style test model, LM head tied to "
                                  "the token embedding (backends/cpu/README.md)"
                                : "pipette's CPU engine Llama-style test model "
                                  "(backends/cpu/README.md)");
  spec.max_positions = 32;
  return spec;
}

// DeepSeek-V3 (DeepSeek-AI 2024, arXiv 2412.19437; HF deepseek-ai/DeepSeek-V3 config.json):
// 61 blocks of hidden 7168, 128 heads, vocab 129280, untied head; blocks 0-2 dense (SwiGLU 18432),
// blocks 3-60 MoE: 256 routed experts of 2048, top 8, 1 shared expert. 671B total, 37B activated
// (the multi-token-prediction module's 14B are not part of either). Multi-head latent attention
// (MLA: q_lora_rank 1536, kv_lora_rank 512, qk heads of 128 + 64 rope, v heads of 128; 187.1M
// parameters per block) is approximated by standard multi-head attention of 128 heads (205.5M
// per block, +1.1B in all; docs/models.md).
DecoderSpec DeepSeekV3() {
  DecoderSpec spec = Llama("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, false, 671'000'000'000,
                           "DeepSeek-AI 2024 (DeepSeek-V3 technical report, arXiv 2412.19437); HF "
                           "deepseek-ai/DeepSeek-V3 config.json (61 layers, hidden 7168, 128 "
                           "heads, first_k_dense_replace 3 with intermediate 18432, 256 routed "
                           "experts of 2048, 8 per token, 1 shared, vocab 129280); 671B total, "
                           "37B activated; MLA approximated by multi-head attention");
  spec.experts = 256;
  spec.top_k = 8;
  spec.expert_ffn_hidden = 2048;
  spec.shared_experts = 1;
  spec.first_dense_blocks = 3;
  spec.published_activated_params = 37'000'000'000;
  return spec;
}

// Mixtral 8x7B (Jiang et al. 2024, arXiv 2401.04088; HF mistralai/Mixtral-8x7B-v0.1 config.json):
// Mistral-7B's attention (32 heads, 8 KV heads) with every MLP an MoE of 8 SwiGLU experts of
// 14336, top 2. 46.7B total, 12.9B activated.
DecoderSpec Mixtral8x7B() {
  DecoderSpec spec = Llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, false, 46'700'000'000,
                           "Jiang et al. 2024 (Mixtral of Experts, arXiv 2401.04088); HF "
                           "mistralai/Mixtral-8x7B-v0.1 config.json (32 layers, hidden 4096, 32 "
                           "heads, 8 kv heads, 8 experts of 14336, 2 per token, vocab 32000); "
                           "46.7B total, 12.9B activated");
  spec.experts = 8;
  spec.top_k = 2;
  spec.expert_ffn_hidden = 14336;
  spec.published_activated_params = 12'900'000'000;
  return spec;
}

// A small MoE decoder, cheap to partition and simulate (pipette's design, no published count):
// 16 blocks of 2048 (16 heads), the first one dense, then 32 routed experts of 1024, top 4, and
// one shared expert (DeepSeek-style fine-grained experts); 3.57B total, 0.92B activated.
DecoderSpec MoeSmall() {
  DecoderSpec spec = Llama("moe-small", 16, 2048, 16, 16, 8192, 32000, false, 0,
                           "pipette's small MoE test model (DeepSeek-style: first block dense, "
                           "32 routed experts of 1024, 4 per token, 1 shared)");
  spec.experts = 32;
  spec.top_k = 4;
  spec.expert_ffn_hidden = 1024;
  spec.shared_experts = 1;
  spec.first_dense_blocks = 1;
  return spec;
}

}  // namespace

std::span<const DecoderSpec> DecoderPresets() {
  static const std::array<DecoderSpec, 16> kPresets = {
      Gpt("gpt2-124m", 12, 768, 12, 1024, 124'000'000,
          "Radford et al. 2019 (GPT-2); HF openai-community/gpt2 config.json (n_layer 12, n_embd "
          "768, n_head 12, n_positions 1024, vocab 50257); OpenAI checkpoint '124M' "
          "(github.com/openai/gpt-2)"),
      Gpt("gpt2-1.5b", 48, 1600, 25, 1024, 1'558'000'000,
          "Radford et al. 2019 (GPT-2); HF openai-community/gpt2-xl config.json (n_layer 48, "
          "n_embd 1600, n_head 25); OpenAI checkpoint '1558M' (github.com/openai/gpt-2)"),
      // Table 2.1 gives GPT-3 XL 24 heads of d_head 128, which does not multiply to d_model 2048;
      // pipette keeps d_head 128 (16 heads). Heads change no parameter and no FLOP count.
      Gpt("gpt3-1.3b", 24, 2048, 16, 2048, 1'320'000'000,
          "Brown et al. 2020 (GPT-3 XL) Table 2.1 (24 layers, d_model 2048, d_head 128, context "
          "2048) and Table D.1 (1,320M params)"),
      Gpt("gpt3-175b", 96, 12288, 96, 2048, 174'600'000'000,
          "Brown et al. 2020 (GPT-3) Table 2.1 (96 layers, d_model 12288, 96 heads of 128, "
          "context 2048) and Table D.1 (174,600M params)"),
      Llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, false, 6'740'000'000,
            "Touvron et al. 2023 (Llama 2); HF meta-llama/Llama-2-7b-hf config.json; 6.74B params "
            "(checkpoint: 6,738,415,616)"),
      Llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, false, 8'030'000'000,
            "Meta 2024 (Llama 3); HF meta-llama/Meta-Llama-3-8B config.json; 8.03B params "
            "(checkpoint: 8,030,261,248)"),
      Llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, false, 70'600'000'000,
            "Meta 2024 (Llama 3); HF meta-llama/Meta-Llama-3-70B config.json; 70.6B params"),
      Llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, false, 405'000'000'000,
            "Llama Team 2024 (The Llama 3 Herd of Models, arXiv 2407.21783) Table 3 (126 layers, "
            "model dimension 16384, FFN 53248, 128 heads, 8 KV heads, 405B params); HF "
            "meta-llama/Llama-3.1-405B config.json (vocabulary 128256)"),
      Llama32_1B(),
      DeepSeekV3(),
      Mixtral8x7B(),
      MoeSmall(),
      TinyGpt("tiny", false),
      TinyGpt("tiny-tied", true),
      TinyLlama("tiny-llama", false),
      TinyLlama("tiny-llama-tied", true),
  };
  return kPresets;
}

const DecoderSpec* FindDecoderPreset(std::string_view name) {
  for (const DecoderSpec& spec : DecoderPresets()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::span<const TwoTowerSpec> TwoTowerPresets() {
  static const std::array<TwoTowerSpec, 1> kPresets = {
      TwoTowerSpec{.name = "vlm-small",
                   .image_size = 224,
                   .patch_size = 16,
                   .channels = 3,
                   .vision_layers = 12,
                   .vision_hidden = 768,
                   .vision_heads = 12,
                   .vision_ffn = 3072,
                   .text = Llama32_1B(),
                   .source = "ViT-B/16 at 224 px (Dosovitskiy et al. 2021, Table 1: 12 layers, "
                             "768, MLP 3072, 12 heads, 86M) + LLaVA-1.5 MLP projector (Liu et "
                             "al. 2023) + the llama3.2-1b decoder"},
  };
  return kPresets;
}

const TwoTowerSpec* FindTwoTowerPreset(std::string_view name) {
  for (const TwoTowerSpec& spec : TwoTowerPresets()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace pipette
