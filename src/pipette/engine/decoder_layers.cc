#include "pipette/engine/decoder_layers.h"

#include <fmt/format.h>

#include <charconv>

namespace pipette {

std::vector<std::string> LayerNames(const DecoderSpec& spec) {
  std::vector<std::string> names = {"embedding"};
  for (int i = 0; i < spec.layers; ++i) {
    names.push_back(fmt::format("block{}.attn", i));
    names.push_back(fmt::format("block{}.mlp", i));
  }
  for (const char* name : {"final_norm", "head", "loss"}) names.emplace_back(name);
  return names;
}

int BlockIndex(std::string_view layer, bool& mlp) {
  if (!layer.starts_with("block")) return -1;
  const std::size_t dot = layer.find('.');
  if (dot == std::string_view::npos) return -1;
  // Only the spelling LayerNames writes: digits without a sign or a leading zero.
  const std::string_view digits = layer.substr(5, dot - 5);
  if (digits.empty() || digits[0] < '0' || digits[0] > '9') return -1;
  if (digits.size() > 1 && digits[0] == '0') return -1;
  int index = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || end != digits.data() + digits.size()) return -1;
  const std::string_view part = layer.substr(dot + 1);
  if (part != "attn" && part != "mlp") return -1;
  mlp = part == "mlp";
  return index;
}

}  // namespace pipette
