#include "model_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <filesystem>

#include "gpt.h"
#include "pipette/model/model_toml.h"

namespace pipette::cpu {
namespace {

struct FileLayer {
  std::string name;
  std::string type;
  const toml::table* keys;

  std::int64_t Int(std::string_view key, std::int64_t fallback) const {
    return (*keys)[key].value_or(fallback);
  }
  bool Bool(std::string_view key) const { return (*keys)[key].value_or(false); }
};

}  // namespace

Result<DecoderSpec> DecoderFromModelFile(const std::string& path) {
  // The file's own rules first (types, shape keys, inputs, cycles).
  PIPETTE_RETURN_IF_ERROR(LoadModelToml(path, Workload{1, 1, DType::kFP32}).status());
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {  // LoadModelToml parsed it: not reached in practice
    return Status::InvalidArgument(fmt::format("model file '{}': {}", path, e.description()));
  }
  std::vector<FileLayer> layers;
  if (const toml::array* array = root["layer"].as_array()) {
    for (const toml::node& node : *array) {
      const toml::table* t = node.as_table();
      layers.push_back(
          {(*t)["name"].value_or(std::string()), (*t)["type"].value_or(std::string()), t});
    }
  }
  auto refuse = [&](const FileLayer& layer, std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "--model {}: layer '{}' ({}) {}; the cpu engine trains files that are GPT-style decoder "
        "chains: embedding with positions, then attention and mlp pairs, norm, head, loss, with "
        "bias = true",
        path, layer.name, layer.type, why));
  };

  DecoderSpec spec;
  spec.name = root["name"].value_or(std::filesystem::path(path).stem().string());
  spec.source = path;
  spec.bias = true;
  spec.learned_positions = true;
  if (layers.size() < 6) {
    return Status::InvalidArgument(fmt::format(
        "--model {}: {} layers; a trainable decoder file has at least 6 (embedding, attention, "
        "mlp, norm, head, loss)",
        path, layers.size()));
  }
  std::size_t k = 0;
  for (const FileLayer& layer : layers) {
    if (layer.keys->contains("inputs")) {
      return refuse(layer, "names its inputs; the engine builds a plain chain");
    }
  }
  const FileLayer& embedding = layers[k++];
  if (embedding.type != "embedding") return refuse(embedding, "comes first; expected embedding");
  spec.vocab = static_cast<int>(embedding.Int("vocab", 0));
  spec.hidden = static_cast<int>(embedding.Int("hidden", 0));
  spec.max_positions = static_cast<int>(embedding.Int("positions", 0));
  if (spec.max_positions <= 0) return refuse(embedding, "has no learned positions (positions)");
  while (k + 3 < layers.size() && layers[k].type == "attention") {
    const FileLayer& attn = layers[k++];
    const FileLayer& mlp = layers[k++];
    if (mlp.type != "mlp") return refuse(mlp, "follows an attention layer; expected mlp");
    const int heads = static_cast<int>(attn.Int("heads", 0));
    if (attn.Int("hidden", 0) != spec.hidden || mlp.Int("hidden", 0) != spec.hidden) {
      return refuse(attn.Int("hidden", 0) != spec.hidden ? attn : mlp,
                    fmt::format("has another hidden than the embedding's {}", spec.hidden));
    }
    if (attn.Int("kv_heads", heads) != heads) return refuse(attn, "uses grouped-query attention");
    if (!attn.Bool("bias")) return refuse(attn, "has no biases (bias = false)");
    if (mlp.Bool("gated")) return refuse(mlp, "is gated (SwiGLU)");
    if (!mlp.Bool("bias")) return refuse(mlp, "has no biases (bias = false)");
    if (spec.layers == 0) {
      spec.heads = heads;
      spec.ffn_hidden = static_cast<int>(mlp.Int("ffn_hidden", 0));
    } else if (heads != spec.heads || mlp.Int("ffn_hidden", 0) != spec.ffn_hidden) {
      return refuse(heads != spec.heads ? attn : mlp,
                    "differs from the first block (heads, ffn_hidden)");
    }
    ++spec.layers;
  }
  spec.kv_heads = spec.heads;
  if (spec.layers == 0) return refuse(layers[k], "follows the embedding; expected attention");
  if (k + 3 != layers.size()) return refuse(layers[k], "is not where the chain expects it");
  const FileLayer& norm = layers[k];
  const FileLayer& head = layers[k + 1];
  const FileLayer& loss = layers[k + 2];
  if (norm.type != "norm") return refuse(norm, "ends the blocks; expected norm");
  for (const FileLayer* layer : {&norm, &head}) {
    if (layer->Int("hidden", 0) != spec.hidden) {
      return refuse(*layer, fmt::format("has another hidden than the embedding's {}", spec.hidden));
    }
  }
  if (!norm.Bool("bias")) return refuse(norm, "is RMSNorm (bias = false)");
  if (head.type != "head") return refuse(head, "follows the final norm; expected head");
  if (loss.type != "loss") return refuse(loss, "follows the head; expected loss");
  if (head.Int("vocab", 0) != spec.vocab || loss.Int("vocab", 0) != spec.vocab) {
    return refuse(head.Int("vocab", 0) != spec.vocab ? head : loss,
                  fmt::format("has another vocab than the embedding's {}", spec.vocab));
  }
  spec.tied_embeddings = head.Bool("tied");
  PIPETTE_RETURN_IF_ERROR(CheckTrainable(spec));
  return spec;
}

}  // namespace pipette::cpu
