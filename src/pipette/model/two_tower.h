// TwoTowerSpec and BuildTwoTower: a vision-language model (LLaVA-style) as a ModelGraph with two
// stage regions, "vision" and "text".
//
// Layers in id (and topological) order:
//   region "vision": vision.patch_embed -> vision.block{i}.attn -> vision.block{i}.mlp -> ...
//                    -> vision.final_norm -> vision.projector
//   region "text":   text.embedding -> text.block0.attn -> ... -> text.final_norm -> text.head
//                    -> text.loss
// plus the edge vision.projector -> text.block0.attn: the first text block consumes both the token
// embedding and the projected image features. Each sample has one image of (image_size /
// patch_size)² patches; their features are prepended to the sample's text, so the vision tower
// runs micro_batch_size sequences of `patches` tokens and every text layer after the embedding runs
// sequences of seq_len + patches tokens (the head and loss included; the embedding reads seq_len).
// The vision tower is a ViT: learned position table of `patches` rows (no class token), LayerNorm,
// biases, GELU MLP, bidirectional attention (costed like the decoder's: full s×s). The projector is
// LLaVA-1.5's two-layer GELU MLP, vision_hidden -> text hidden -> text hidden.
// Plain value type; the function is pure.
#pragma once

#include <cstdint>
#include <string>

#include "pipette/common/status.h"
#include "pipette/model/decoder.h"
#include "pipette/model/model_graph.h"

namespace pipette {

struct TwoTowerSpec {
  std::string name;
  // vision encoder (ViT)
  int image_size = 0;  // pixels per side (square images)
  int patch_size = 0;  // pixels per patch side
  int channels = 0;    // 3 for RGB
  int vision_layers = 0;
  int vision_hidden = 0;
  int vision_heads = 0;
  int vision_ffn = 0;
  // text decoder
  DecoderSpec text;
  std::string source;  // where the two towers' architectures come from
};

// Returns the number of image patches (vision tokens) per sample: (image_size / patch_size)².
// REQUIRES: both >= 1.
std::int64_t PatchesPerImage(const TwoTowerSpec& spec);

// Returns the graph described above (name spec.name; attributes: blocks of both towers, the text
// tower's hidden, heads, kv_heads and vocab), or InvalidArgument naming the model, field, value
// and rule: every vision count >= 1 and within the limits of layer_formulas.h, image_size
// divisible by patch_size, vision_hidden divisible by vision_heads, a valid text DecoderSpec, and
// seq_len + patches within the workload limits.
Result<ModelGraph> BuildTwoTower(const TwoTowerSpec& spec, const Workload& workload);

}  // namespace pipette
