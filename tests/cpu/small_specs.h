// Small decoders for the CPU engine's gradient and memory tests: two blocks of width 16, vocab 11,
// context 8, fast enough to check every parameter by finite differences.
#pragma once

#include "pipette/model/decoder.h"
#include "pipette/model/model_presets.h"

namespace pipette::cpu::test_specs {

// tiny scaled down: GPT-style, 2 heads, MLP 32.
inline DecoderSpec SmallGptSpec(bool tied) {
  DecoderSpec spec = *FindDecoderPreset("tiny");
  spec.layers = 2;
  spec.hidden = 16;
  spec.heads = 2;
  spec.kv_heads = 2;
  spec.ffn_hidden = 32;
  spec.vocab = 11;
  spec.max_positions = 8;
  spec.tied_embeddings = tied;
  return spec;
}

// tiny-llama scaled down: 4 query heads sharing 2 kv heads, SwiGLU 24.
inline DecoderSpec SmallLlamaSpec(bool tied) {
  DecoderSpec spec = *FindDecoderPreset("tiny-llama");
  spec.layers = 2;
  spec.hidden = 16;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.ffn_hidden = 24;
  spec.vocab = 11;
  spec.max_positions = 8;
  spec.tied_embeddings = tied;
  return spec;
}

}  // namespace pipette::cpu::test_specs
