#include "pipette/engine/decoder_from_graph.h"

#include <fmt/format.h>

#include <iterator>
#include <string_view>

#include "pipette/engine/train_plan.h"

namespace pipette {
namespace {

// Returns InvalidArgument: `layer` keeps the graph named `source` from being a trainable decoder.
Status Refuse(const std::string& source, const Layer& layer, std::string_view why) {
  return Status::InvalidArgument(fmt::format(
      "--model {}: layer '{}' ({}) {}; the real engines train files that are decoder chains: "
      "embedding, then attention and mlp pairs, norm, head, loss; GPT-style (embedding with "
      "positions, bias = true everywhere) or Llama-style (embedding without positions, "
      "bias = false, gated = true mlps, any kv_heads)",
      source, layer.name, layer.type, why));
}

// Returns the first layer (in id order) whose only input is not the layer before it (the first
// layer has none), nullptr for a plain chain.
const Layer* FirstOffChain(const ModelGraph& graph) {
  for (LayerId v = 0; v < graph.num_layers(); ++v) {
    const auto [begin, end] = boost::in_edges(v, graph.graph);
    const bool chained =
        v == 0 ? begin == end
               : std::distance(begin, end) == 1 && boost::source(*begin, graph.graph) == v - 1;
    if (!chained) return &graph.layer(v);
  }
  return nullptr;
}

// OK when the block (attn, mlp) has the style the embedding set: GPT-style (spec.bias: biases,
// GELU, one KV head per query head) or Llama-style (no biases, SwiGLU, grouped-query heads).
Status CheckBlockStyle(const Layer& attn, const Layer& mlp, const std::string& source,
                       const DecoderSpec& spec) {
  const bool llama = !spec.bias;
  const char* style = llama ? "in a Llama-style chain (the embedding has no positions)"
                            : "in a GPT-style chain (the embedding has positions)";
  if (attn.shape.bias == llama) {
    return Refuse(source, attn, fmt::format("has {} {}", llama ? "biases" : "no biases", style));
  }
  if (!llama && attn.shape.kv_heads != attn.shape.heads) {
    return Refuse(source, attn, fmt::format("uses grouped-query attention {}", style));
  }
  if (mlp.shape.gated != llama) {
    return Refuse(source, mlp,
                  fmt::format("is {} {}", llama ? "not gated" : "gated (SwiGLU)", style));
  }
  if (mlp.shape.bias == llama) {
    return Refuse(source, mlp, fmt::format("has {} {}", llama ? "biases" : "no biases", style));
  }
  return Status::Ok();
}

// Reads the (attention, mlp) blocks from layer `k` on into `spec`, leaving the last three layers
// for norm, head and loss; returns the id after the last block.
Result<LayerId> ReadBlocks(const ModelGraph& graph, LayerId k, const std::string& source,
                           DecoderSpec& spec) {
  while (k + 3 < graph.num_layers() && graph.layer(k).type == "attention") {
    const Layer& attn = graph.layer(k++);
    const Layer& mlp = graph.layer(k++);
    if (mlp.type != "mlp") return Refuse(source, mlp, "follows an attention layer; expected mlp");
    const LayerShape& a = attn.shape;
    const LayerShape& f = mlp.shape;
    if (a.hidden != spec.hidden || f.hidden != spec.hidden) {
      return Refuse(source, a.hidden != spec.hidden ? attn : mlp,
                    fmt::format("has another hidden than the embedding's {}", spec.hidden));
    }
    PIPETTE_RETURN_IF_ERROR(CheckBlockStyle(attn, mlp, source, spec));
    if (spec.layers == 0) {
      spec.heads = static_cast<int>(a.heads);
      spec.kv_heads = static_cast<int>(a.kv_heads);
      spec.ffn_hidden = static_cast<int>(f.ffn_hidden);
    } else if (a.heads != spec.heads || a.kv_heads != spec.kv_heads ||
               f.ffn_hidden != spec.ffn_hidden) {
      return Refuse(source, f.ffn_hidden != spec.ffn_hidden ? mlp : attn,
                    "differs from the first block (heads, kv_heads, ffn_hidden)");
    }
    ++spec.layers;
  }
  return k;
}

// Reads the final norm, the head and the loss (layers k, k + 1, k + 2) into `spec`.
Status ReadEnd(const ModelGraph& graph, LayerId k, const std::string& source, DecoderSpec& spec) {
  const Layer& norm = graph.layer(k);
  const Layer& head = graph.layer(k + 1);
  const Layer& loss = graph.layer(k + 2);
  if (norm.type != "norm") return Refuse(source, norm, "ends the blocks; expected norm");
  for (const Layer* layer : {&norm, &head}) {
    if (layer->shape.hidden != spec.hidden) {
      return Refuse(source, *layer,
                    fmt::format("has another hidden than the embedding's {}", spec.hidden));
    }
  }
  if (norm.shape.bias != spec.bias) {
    return Refuse(source, norm,
                  spec.bias ? "is RMSNorm (bias = false) in a GPT-style chain"
                            : "is LayerNorm (bias = true) in a Llama-style chain");
  }
  if (head.type != "head") return Refuse(source, head, "follows the final norm; expected head");
  if (loss.type != "loss") return Refuse(source, loss, "follows the head; expected loss");
  if (head.shape.vocab != spec.vocab || loss.shape.vocab != spec.vocab) {
    return Refuse(source, head.shape.vocab != spec.vocab ? head : loss,
                  fmt::format("has another vocab than the embedding's {}", spec.vocab));
  }
  spec.tied_embeddings = head.shape.tied;
  return Status::Ok();
}

}  // namespace

Result<DecoderSpec> DecoderFromGraph(const ModelGraph& graph, const std::string& source) {
  const std::size_t n = graph.num_layers();
  if (n < 6) {
    return Status::InvalidArgument(fmt::format(
        "--model {}: {} layers; a trainable decoder file has at least 6 (embedding, attention, "
        "mlp, norm, head, loss)",
        source, n));
  }
  if (const Layer* layer = FirstOffChain(graph)) {
    return Refuse(source, *layer,
                  "does not take just the layer before it as its input; the engine builds a plain "
                  "chain");
  }
  DecoderSpec spec;
  spec.name = graph.name;
  spec.source = source;
  const Layer& embedding = graph.layer(0);
  if (embedding.type != "embedding") {
    return Refuse(source, embedding, "comes first; expected embedding");
  }
  spec.vocab = static_cast<int>(embedding.shape.vocab);
  spec.hidden = static_cast<int>(embedding.shape.hidden);
  // Learned positions make the chain GPT-style; none make it Llama-style (RoPE), whose file gives
  // no context length: max_positions 0, so `pipette train` needs --seq-len.
  spec.max_positions = static_cast<int>(embedding.shape.positions);
  spec.learned_positions = spec.max_positions > 0;
  spec.bias = spec.learned_positions;
  spec.gated_mlp = !spec.learned_positions;
  PIPETTE_ASSIGN_OR_RETURN(const LayerId k, ReadBlocks(graph, 1, source, spec));
  if (spec.layers == 0)
    return Refuse(source, graph.layer(k), "follows the embedding; expected attention");
  if (k + 3 != n) return Refuse(source, graph.layer(k), "is not where the chain expects it");
  PIPETTE_RETURN_IF_ERROR(ReadEnd(graph, k, source, spec));
  PIPETTE_RETURN_IF_ERROR(CheckTrainable(spec));
  return spec;
}

}  // namespace pipette
