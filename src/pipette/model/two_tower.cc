#include "pipette/model/two_tower.h"

#include <fmt/core.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "pipette/model/layer_formulas.h"

namespace pipette {
namespace {

Status ValidateVision(const TwoTowerSpec& spec) {
  const std::string context = fmt::format("model '{}'", spec.name);
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "image_size", spec.image_size, 1, kMaxDimension));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "patch_size", spec.patch_size, 1, kMaxDimension));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "channels", spec.channels, 1, kMaxDimension));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "vision_layers", spec.vision_layers, 1, kMaxLayers));
  PIPETTE_RETURN_IF_ERROR(
      CheckRange(context, "vision_hidden", spec.vision_hidden, 1, kMaxDimension));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "vision_heads", spec.vision_heads, 1, kMaxHeads));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "vision_ffn", spec.vision_ffn, 1, kMaxDimension));
  if (spec.image_size % spec.patch_size != 0) {
    return Status::InvalidArgument(
        fmt::format("{}: image_size = {}, patch_size = {}: image_size must be divisible by "
                    "patch_size (whole patches)",
                    context, spec.image_size, spec.patch_size));
  }
  if (spec.vision_hidden % spec.vision_heads != 0) {
    return Status::InvalidArgument(
        fmt::format("{}: vision_hidden = {}, vision_heads = {}: vision_hidden must be divisible by "
                    "vision_heads",
                    context, spec.vision_hidden, spec.vision_heads));
  }
  const std::int64_t patch_values = std::int64_t{spec.channels} * spec.patch_size * spec.patch_size;
  if (patch_values > kMaxDimension) {
    return Status::InvalidArgument(fmt::format(
        "{}: channels·patch_size² = {}·{}² = {}: more than the limit of {} values per patch",
        context, spec.channels, spec.patch_size, patch_values, kMaxDimension));
  }
  return CheckRange(context, "patches per image (image_size / patch_size)²", PatchesPerImage(spec),
                    1, kMaxSeqLen);
}

}  // namespace

std::int64_t PatchesPerImage(const TwoTowerSpec& spec) {
  const std::int64_t side = spec.image_size / spec.patch_size;
  return side * side;
}

Result<ModelGraph> BuildTwoTower(const TwoTowerSpec& spec, const Workload& workload) {
  PIPETTE_RETURN_IF_ERROR(ValidateVision(spec));
  PIPETTE_RETURN_IF_ERROR(
      ValidateDecoderSpec(spec.text).WithContext(fmt::format("model '{}': text tower", spec.name)));
  const std::string context = fmt::format("model '{}'", spec.name);
  PIPETTE_RETURN_IF_ERROR(ValidateWorkload(workload).WithContext(context));
  const std::int64_t patches = PatchesPerImage(spec);
  // The text tower sees seq_len + patches tokens per sequence.
  const std::int64_t text_seq_len = workload.seq_len + patches;
  const std::int64_t text_tokens = workload.micro_batch_size * text_seq_len;
  if (text_seq_len > kMaxSeqLen || text_tokens > kMaxTokensPerMicrobatch) {
    return Status::InvalidArgument(fmt::format(
        "{}: seq_len + patches = {} + {} = {} text-tower tokens per sequence, {} per microbatch: "
        "more than the limit of {} per sequence or {} per microbatch",
        context, workload.seq_len, patches, text_seq_len, text_tokens, kMaxSeqLen,
        kMaxTokensPerMicrobatch));
  }

  ModelGraph model;
  model.name = spec.name;
  model.workload = workload;
  model.attributes = ModelAttributes{spec.vision_layers + spec.text.layers, spec.text.hidden,
                                     spec.text.heads, spec.text.kv_heads, spec.text.vocab};

  const TokenBatch vision{workload.micro_batch_size, patches, BytesOf(workload.dtype)};
  const AttentionShape attention{spec.vision_hidden, spec.vision_heads, spec.vision_heads, true};
  const MlpShape mlp{spec.vision_hidden, spec.vision_ffn, false, true};
  std::optional<LayerId> previous;
  auto append = [&](Layer layer) {
    layer.name = "vision." + layer.name;
    layer.region = "vision";
    const LayerId id = model.AddLayer(std::move(layer));
    if (previous) model.Connect(*previous, id, model.layer(*previous).output_bytes);
    previous = id;
  };
  append(PatchEmbeddingLayer("patch_embed",
                             std::int64_t{spec.channels} * spec.patch_size * spec.patch_size,
                             spec.vision_hidden, patches, vision));
  for (int i = 0; i < spec.vision_layers; ++i) {
    append(AttentionLayer(fmt::format("block{}.attn", i), attention, vision));
    append(MlpLayer(fmt::format("block{}.mlp", i), mlp, vision));
  }
  append(NormLayer("final_norm", spec.vision_hidden, true, vision));
  append(ProjectorLayer("projector", spec.vision_hidden, spec.text.hidden, vision));

  DecoderPlacement placement;
  placement.region = "text";
  placement.name_prefix = "text.";
  placement.prefix_producer = previous;
  placement.prefix_tokens = patches;
  AppendDecoder(spec.text, workload, placement, model);
  return model;
}

}  // namespace pipette
