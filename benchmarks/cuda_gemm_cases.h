// The GEMMs of the CUDA engine's benchmark stages, shared by cuda_gemm_benchmark (which times
// them) and tests/cuda/gemm_gpu_test (which checks them): every linear layer of one
// GPT-3-1.3B-shaped and one Llama-3.2-1B-shaped pipeline stage, F, I and W, with the operands the
// model path reads. Header-only; needs a device for everything but the shapes.
//
// Like for like: the engine's call reads the weight's bf16 shadow and the activations' bf16
// shadows, rounded once when the case is made (RankDevice::ActivationOperand, as every linear
// layer of model.cc reads them), so a timed call is the plan's algorithm alone, as the
// candidates cuBLASLt's heuristic offers are timed; the rounding is a pass of its own
// (`convert_elements`), which the model path runs once per activation, or not at all where the
// kernel that produces it writes the bf16 copy too (backends/cuda/README.md, "The GEMM path").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_tensor.h"
#include "cuda/gemm_plan.h"
#include "cuda/linear.h"
#include "cuda/model.h"
#include "cuda/rank_device.h"

namespace pipette::cuda {

// One linear layer of a stage: y = x W^T (+ bias) (+ residual), W out x in. The head's logits are
// padded as the model pads them (LogitsCols).
struct LinearLayer {
  std::string name;
  int in = 0, out = 0;
  bool bias = false, residual = false, head = false;
};

struct StageModel {
  std::string name;
  std::vector<LinearLayer> layers;
};

// GPT-3 1.3B: h 2048, 16 heads, ffn 8192, vocab 50257, biases. Llama 3.2 1B: h 2048, 32 heads of
// 64, 8 KV heads (q 2048 + k, v 512 each), SwiGLU 8192 (fc: gate and up, 16384 columns), vocab
// 128256, no biases.
inline std::vector<StageModel> BenchmarkStages() {
  const int h = 2048;
  return {{"gpt3-1.3b",
           {{"qkv", h, 3 * h, true, false, false},
            {"proj", h, h, true, true, false},
            {"fc", h, 8192, true, false, false},
            {"fc2", 8192, h, true, true, false},
            {"head", h, 50257, false, false, true}}},
          {"llama3.2-1b",
           {{"qkv", h, h + 2 * 8 * 64, false, false, false},
            {"proj", h, h, false, true, false},
            {"fc", h, 2 * 8192, false, false, false},
            {"fc2", 8192, h, false, true, false},
            {"head", h, 128256, false, false, true}}}};
}

// Entry i of the tensor filled from `seed`: a hash of (seed, i) in [-1, 1), so that a test can
// recompute any entry of a tensor too large to keep on the host.
inline float HashValue(std::uint64_t seed, std::int64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(i);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / static_cast<float>(1 << 23) - 1.0f;
}

// A rows x cols tensor of HashValue(seed, .) on `dev`, uploaded in chunks.
inline DeviceTensor HashTensor(RankDevice& dev, int rows, int cols, std::uint64_t seed) {
  DeviceTensor t = dev.Uninitialized(rows, cols);
  const std::int64_t n = t.size(), chunk = std::int64_t{1} << 24;
  std::vector<float> host(static_cast<std::size_t>(n < chunk ? n : chunk));
  for (std::int64_t at = 0; at < n; at += chunk) {
    const std::int64_t len = n - at < chunk ? n - at : chunk;
    for (std::int64_t i = 0; i < len; ++i) host[i] = HashValue(seed, at + i);
    PIPETTE_CUDA_CHECK(cudaMemcpy(t.data() + at, host.data(),
                                  static_cast<std::size_t>(len) * sizeof(float),
                                  cudaMemcpyHostToDevice));
  }
  return t;
}

// The seeds of a layer's tensors (HashValue): what a test recomputes.
enum LayerSeed : std::uint64_t { kSeedX = 1, kSeedW, kSeedDy, kSeedDw, kSeedBias, kSeedResidual };

// One layer's tensors for `tokens` rows: x (tokens x in), W, dy (tokens x output columns), dW
// (accumulated into), the bias and residual when the layer has them, y and dx.
struct LayerTensors {
  int tokens = 0, out_cols = 0;
  DeviceTensor x, w, dy, dw, bias, residual, y, dx;
  LayerTensors(RankDevice& dev, int rows, const LinearLayer& l)
      : tokens(rows), out_cols(l.head ? LogitsCols(l.out) : l.out) {
    x = HashTensor(dev, rows, l.in, kSeedX);
    w = HashTensor(dev, l.out, l.in, kSeedW);
    dy = HashTensor(dev, rows, out_cols, kSeedDy);
    dw = HashTensor(dev, l.out, l.in, kSeedDw);
    if (l.bias) bias = HashTensor(dev, 1, l.out, kSeedBias);
    if (l.residual) residual = HashTensor(dev, rows, l.out, kSeedResidual);
    y = dev.Tensor(rows, out_cols);
    dx = dev.Tensor(rows, l.in);
  }
};

struct LayerGemms {
  GemmArgs f, i, w;
  // Elements each GEMM's activation operands hold (x for F; dy for I; dy and x for W): what a
  // rounding pass reads, were it not done already.
  std::int64_t f_convert = 0, i_convert = 0, w_convert = 0;
};

// The layer's F, I and W over `t` as the model path calls them: the weight's shadow and the
// activations' shadows (made now, at bf16 precision), the head's over padded logits.
inline LayerGemms MakeLayerGemms(RankDevice& dev, const LinearLayer& l, LayerTensors& t) {
  const GemmOperand x = dev.ActivationOperand(t.x), w = dev.WeightOperand(t.w);
  const GemmOperand dy = dev.ActivationOperand(t.dy);
  const int rows = t.tokens;
  LayerGemms g;
  if (l.head) {
    g.f = HeadForwardArgs(rows, l.in, l.out, x, w, t.y.data());
    g.i = HeadInputGradArgs(rows, l.in, l.out, dy, w, t.dx.data());
    g.w = HeadWeightGradArgs(rows, l.in, l.out, dy, x, t.dw.data());
  } else {
    g.f = LinearForwardArgs(rows, l.in, l.out, x, w, l.bias ? t.bias.data() : nullptr,
                            l.residual ? t.residual.data() : nullptr, t.y.data());
    g.i = LinearInputGradArgs(rows, l.in, l.out, dy, w, t.dx.data(), false);
    g.w = LinearWeightGradArgs(rows, l.in, l.out, dy, x, t.dw.data());
  }
  g.f_convert = t.x.size();
  g.i_convert = t.dy.size();
  g.w_convert = t.dy.size() + t.x.size();
  return g;
}

}  // namespace pipette::cuda
