// The CUDA engine's GEMMs against the fastest cuBLASLt has: for every GEMM of one GPT-3-1.3B-shaped
// and one Llama-3.2-1B-shaped pipeline stage (8192 tokens: sequence 2048, micro-batch 4), in bf16,
// the engine's own call (RankDevice::Gemm through its cached plan: the weight read from its bf16
// shadow, the activations rounded to bf16 in the call, the bias in the epilogue, the residual as
// C) next to every algorithm cuBLASLt's heuristic offers for that shape (up to 32, each on
// operands already in bf16), each the median of several CUDA-event timings after warm-ups.
//
//   cuda_gemm_benchmark [--quick] [--json FILE]
//
// Columns: engine_s (the engine's call), plan_s (the plan's algorithm alone), first_s (the
// heuristic's first), best_s (the fastest algorithm), ratio = engine_s / best_s, and the TFLOP/s
// of the engine's call and of the best (2 m n k FLOPs). A best more than 5% faster than the
// heuristic's first is what PIPETTE_GEMM_AUTOTUNE=1 picks up. --quick: 2048 tokens, fewer reps.
// Without a GPU it says so and exits 0 (nothing to measure).
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/device.h"
#include "cuda/trainer.h"

namespace pipette::cuda {
namespace {

// One linear layer of a stage: y = x W^T (+ bias) (+ residual), W out x in.
struct LinearLayer {
  std::string name;
  int in = 0, out = 0;
  bool bias = false, residual = false;
};

struct StageModel {
  std::string name;
  std::vector<LinearLayer> layers;
};

std::vector<StageModel> Models() {
  const int h = 2048;
  // GPT-3 1.3B: h 2048, 16 heads, ffn 8192, vocab 50257, biases.
  StageModel gpt{"gpt3-1.3b",
                 {{"qkv", h, 3 * h, true, false},
                  {"proj", h, h, true, true},
                  {"fc", h, 8192, true, false},
                  {"fc2", 8192, h, true, true},
                  {"head", h, 50257, false, false}}};
  // Llama 3.2 1B: h 2048, 32 heads of 64, 8 KV heads (q 2048 + k, v 512 each), SwiGLU 8192
  // (fc: gate and up, 16384 columns), vocab 128256, no biases.
  StageModel llama{"llama3.2-1b",
                   {{"qkv", h, h + 2 * 8 * 64, false, false},
                    {"proj", h, h, false, true},
                    {"fc", h, 2 * 8192, false, false},
                    {"fc2", 8192, h, false, true},
                    {"head", h, 128256, false, false}}};
  return {gpt, llama};
}

struct Reps {
  int warmup = 3;
  int reps = 10;
};

// The tensors of one layer's three GEMMs (random values: speed does not depend on them much,
// but zeros could flatter it).
struct LayerTensors {
  DeviceTensor x, w, bias, residual, y, dy, dx, dw;
  LayerTensors(RankDevice& dev, int tokens, const LinearLayer& l) {
    x = Random(dev, tokens, l.in, 1);
    w = Random(dev, l.out, l.in, 2);
    if (l.bias) bias = Random(dev, 1, l.out, 3);
    if (l.residual) residual = Random(dev, tokens, l.out, 4);
    y = dev.Tensor(tokens, l.out);
    dy = Random(dev, tokens, l.out, 5);
    dx = dev.Tensor(tokens, l.in);
    dw = dev.Tensor(l.out, l.in);
  }
  static DeviceTensor Random(RankDevice& dev, int rows, int cols, unsigned seed) {
    std::vector<float> host(static_cast<std::size_t>(rows) * cols);
    unsigned state = seed * 2654435761u + 1;
    for (float& v : host) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 0.2f - 0.1f;
    }
    return dev.Upload(host.data(), rows, cols);
  }
};

std::string Trans(const GemmArgs& g) {
  return std::string(g.trans_a ? "T" : "N") + (g.trans_b ? "T" : "N");
}

nlohmann::ordered_json Measure(RankDevice& dev, const std::string& name, const GemmArgs& args,
                               const Reps& reps) {
  const double engine_s =
      MedianStreamSeconds(dev.stream(), reps.warmup, reps.reps, [&] { dev.Gemm(args); });
  int chosen = 0;
  const std::vector<double> algos = dev.TimeGemmAlgos(args, 32, reps.warmup, reps.reps, &chosen);
  const auto best = std::min_element(algos.begin(), algos.end());
  const double best_s = *best, flops = 2.0 * args.m * args.n * args.k;
  const double first_s = algos.front(), plan_s = algos[chosen];
  fmt::print(
      "{:<24} {:>6} {:>6} {:>6} {:>3} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>6.3f} "
      "{:>7.1f} {:>7.1f} {:>4} {:>4}\n",
      name, args.m, args.n, args.k, Trans(args), engine_s * 1e6, plan_s * 1e6, first_s * 1e6,
      best_s * 1e6, engine_s / best_s, flops / engine_s * 1e-12, flops / best_s * 1e-12,
      static_cast<int>(algos.size()), best - algos.begin());
  return {{"name", name},
          {"m", args.m},
          {"n", args.n},
          {"k", args.k},
          {"trans", Trans(args)},
          {"engine_s", engine_s},
          {"plan_s", plan_s},
          {"first_s", first_s},
          {"best_s", best_s},
          {"ratio", engine_s / best_s},
          {"tflops", flops / engine_s * 1e-12},
          {"best_tflops", flops / best_s * 1e-12},
          {"algos", algos.size()},
          {"best_index", best - algos.begin()},
          {"best_beats_first_by_5pct", best_s < first_s / 1.05}};
}

nlohmann::ordered_json MeasureLayer(RankDevice& dev, const std::string& model, int tokens,
                                    const LinearLayer& l, const Reps& reps) {
  LayerTensors t(dev, tokens, l);
  const GemmOperand w = dev.WeightOperand(t.w);
  const std::string prefix = model + "." + l.name;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  out.push_back(Measure(dev, prefix + ".F",
                        LinearForwardArgs(tokens, l.in, l.out, {t.x.data(), nullptr}, w,
                                          l.bias ? t.bias.data() : nullptr,
                                          l.residual ? t.residual.data() : nullptr, t.y.data()),
                        reps));
  out.push_back(Measure(
      dev, prefix + ".I",
      LinearInputGradArgs(tokens, l.in, l.out, {t.dy.data(), nullptr}, w, t.dx.data(), false),
      reps));
  out.push_back(Measure(dev, prefix + ".W",
                        LinearWeightGradArgs(tokens, l.in, l.out, {t.dy.data(), nullptr},
                                             {t.x.data(), nullptr}, t.dw.data()),
                        reps));
  return out;
}

nlohmann::ordered_json Run(bool quick) {
  const int tokens = quick ? 2048 : 8192;
  const Reps reps = quick ? Reps{1, 3} : Reps{3, 10};
  RankDevice dev(GemmPrecision::kBf16, /*autotune=*/false);
  fmt::print(
      "# bf16 operands, fp32 accumulation and output; {} tokens; median of {} after {} "
      "warm-ups\n",
      tokens, reps.reps, reps.warmup);
  fmt::print(
      "{:<24} {:>6} {:>6} {:>6} {:>3} {:>10} {:>10} {:>10} {:>10} {:>6} {:>7} {:>7} {:>4} "
      "{:>4}\n",
      "# gemm", "m", "n", "k", "op", "engine", "plan", "first", "best", "ratio", "engine", "best",
      "alg", "best");
  fmt::print(
      "{:<24} {:>6} {:>6} {:>6} {:>3} {:>10} {:>10} {:>10} {:>10} {:>6} {:>7} {:>7} {:>4} "
      "{:>4}\n",
      "#", "", "", "", "", "us", "us", "us", "us", "", "TFLOP/s", "TFLOP/s", "n", "idx");
  nlohmann::ordered_json gemms = nlohmann::ordered_json::array();
  for (const StageModel& model : Models()) {
    for (const LinearLayer& layer : model.layers) {
      for (auto& g : MeasureLayer(dev, model.name, tokens, layer, reps)) gemms.push_back(g);
    }
  }
  return {{"tokens", tokens}, {"precision", "bf16"}, {"gemms", gemms}};
}

}  // namespace
}  // namespace pipette::cuda

int main(int argc, char** argv) {
  using namespace pipette::cuda;
  bool quick = false;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
  }
  if (DeviceCount() == 0) {
    fmt::print("no CUDA device: nothing to measure\n");
    return 0;
  }
  fmt::print("# cuda_gemm_benchmark on {}\n", DeviceDescription());
  nlohmann::ordered_json json = Run(quick);
  json["device"] = DeviceDescription();
  if (!json_path.empty()) std::ofstream(json_path) << json.dump(2) << "\n";
  return 0;
}
