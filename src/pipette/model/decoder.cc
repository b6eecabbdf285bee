#include "pipette/model/decoder.h"

#include <fmt/core.h>

#include <utility>

#include "pipette/model/layer_formulas.h"

namespace pipette {
namespace {

MoeShape MoeOf(const DecoderSpec& spec) {
  return MoeShape{.hidden = spec.hidden,
                  .expert_ffn = spec.expert_ffn_hidden,
                  .experts = spec.experts,
                  .top_k = spec.top_k,
                  .shared_experts = spec.shared_experts,
                  .capacity_factor = spec.capacity_factor,
                  .gated = spec.gated_mlp,
                  .bias = spec.bias};
}

Status ValidateMoe(const DecoderSpec& spec, const std::string& context) {
  if (spec.experts == 0) {
    for (const auto& [key, set] : {std::pair{"moe_top_k", spec.top_k != 0},
                                   {"moe_expert_ffn_hidden", spec.expert_ffn_hidden != 0},
                                   {"moe_shared_experts", spec.shared_experts != 0},
                                   {"moe_capacity_factor", spec.capacity_factor != 1},
                                   {"moe_first_dense_blocks", spec.first_dense_blocks != 0}}) {
      if (set) {
        return Status::InvalidArgument(fmt::format(
            "{}: {} is set but moe_experts = 0: MoE keys need moe_experts >= 1", context, key));
      }
    }
    return Status::Ok();
  }
  PIPETTE_RETURN_IF_ERROR(CheckMoeShape(context, "moe_", MoeOf(spec)));
  return CheckRange(context, "moe_first_dense_blocks", spec.first_dense_blocks, 0, spec.layers);
}

}  // namespace

Status ValidateDecoderSpec(const DecoderSpec& spec) {
  const std::string context = fmt::format("model '{}'", spec.name);
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "layers", spec.layers, 1, kMaxLayers));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "hidden", spec.hidden, 1, kMaxDimension));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "heads", spec.heads, 1, kMaxHeads));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "kv_heads", spec.kv_heads, 1, kMaxHeads));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "ffn_hidden", spec.ffn_hidden, 1, kMaxDimension));
  PIPETTE_RETURN_IF_ERROR(CheckRange(context, "vocab", spec.vocab, 1, kMaxDimension));
  if (spec.learned_positions) {
    PIPETTE_RETURN_IF_ERROR(
        CheckRange(context, "max_positions", spec.max_positions, 1, kMaxDimension));
  }
  PIPETTE_RETURN_IF_ERROR(ValidateMoe(spec, context));
  if (spec.hidden % spec.heads != 0) {
    return Status::InvalidArgument(
        fmt::format("{}: hidden = {}, heads = {}: hidden must be divisible by heads", context,
                    spec.hidden, spec.heads));
  }
  if (spec.heads % spec.kv_heads != 0) {
    return Status::InvalidArgument(fmt::format(
        "{}: heads = {}, kv_heads = {}: heads must be divisible by kv_heads (each K/V head "
        "serves heads/kv_heads query heads)",
        context, spec.heads, spec.kv_heads));
  }
  return Status::Ok();
}

LayerId AppendDecoder(const DecoderSpec& spec, const Workload& workload,
                      const DecoderPlacement& placement, ModelGraph& model) {
  const TokenBatch text = TokensOf(workload);  // what the embedding reads
  const TokenBatch tokens = TokensOf(workload, placement.prefix_tokens);  // every later layer
  const AttentionShape attention{spec.hidden, spec.heads, spec.kv_heads, spec.bias};
  const MlpShape mlp{spec.hidden, spec.ffn_hidden, spec.gated_mlp, spec.bias};

  std::optional<LayerId> previous;
  auto append = [&](Layer layer) {
    layer.name = placement.name_prefix + layer.name;
    layer.region = placement.region;
    const LayerId id = model.AddLayer(std::move(layer));
    if (previous) model.Connect(*previous, id, model.layer(*previous).output_bytes);
    previous = id;
    return id;
  };

  append(EmbeddingLayer("embedding", spec.vocab, spec.hidden,
                        spec.learned_positions ? spec.max_positions : 0, text));
  LayerId first_block = 0;
  for (int i = 0; i < spec.layers; ++i) {
    const LayerId attn = append(AttentionLayer(fmt::format("block{}.attn", i), attention, tokens));
    if (i == 0) {
      first_block = attn;
      if (placement.prefix_producer) {
        const LayerId producer = *placement.prefix_producer;
        model.Connect(producer, attn, model.layer(producer).output_bytes);
      }
    }
    if (spec.experts > 0 && i >= spec.first_dense_blocks) {
      append(MoeLayer(fmt::format("block{}.moe", i), MoeOf(spec), tokens));
    } else {
      append(MlpLayer(fmt::format("block{}.mlp", i), mlp, tokens));
    }
  }
  append(NormLayer("final_norm", spec.hidden, spec.bias, tokens));
  append(HeadLayer("head", spec.hidden, spec.vocab, spec.tied_embeddings, tokens));
  append(LossLayer("loss", spec.vocab, tokens));
  return first_block;
}

Result<ModelGraph> BuildDecoder(const DecoderSpec& spec, const Workload& workload) {
  PIPETTE_RETURN_IF_ERROR(ValidateDecoderSpec(spec));
  PIPETTE_RETURN_IF_ERROR(
      ValidateWorkload(workload).WithContext(fmt::format("model '{}'", spec.name)));
  ModelGraph model;
  model.name = spec.name;
  model.workload = workload;
  model.attributes = ModelAttributes{spec.layers,   spec.hidden, spec.heads,
                                     spec.kv_heads, spec.vocab,  spec.experts};
  AppendDecoder(spec, workload, DecoderPlacement{}, model);
  return model;
}

}  // namespace pipette
