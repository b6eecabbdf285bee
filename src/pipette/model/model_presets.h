// Model presets: published architectures by name, each with its published parameter count and the
// source both come from (docs/models.md tabulates them against pipette's counts).
//
// Decoders: gpt2-124m, gpt2-1.5b, gpt3-1.3b, gpt3-175b, llama2-7b, llama3-8b, llama3-70b,
// llama3.2-1b, the mixtures of experts deepseek-v3, mixtral-8x7b and moe-small, and the CPU
// engine's own tiny, tiny-tied, tiny-llama and tiny-llama-tied
// (published_params 0). Two-tower
// (vision-language): vlm-small. The tables are immutable statics; the returned spans and pointers
// stay valid for the life of the program; safe from any thread.
#pragma once

#include <span>
#include <string_view>

#include "pipette/model/decoder.h"
#include "pipette/model/two_tower.h"

namespace pipette {

// Returns every decoder preset, in the order `pipette models` lists them.
std::span<const DecoderSpec> DecoderPresets();
// Returns the decoder preset called `name`, or nullptr.
const DecoderSpec* FindDecoderPreset(std::string_view name);

// Returns every two-tower preset.
std::span<const TwoTowerSpec> TwoTowerPresets();
// Returns the two-tower preset called `name`, or nullptr.
const TwoTowerSpec* FindTwoTowerPreset(std::string_view name);

}  // namespace pipette
