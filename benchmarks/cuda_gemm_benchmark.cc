// The CUDA engine's GEMMs against the fastest cuBLASLt has: for every GEMM of one GPT-3-1.3B-shaped
// and one Llama-3.2-1B-shaped pipeline stage (8192 tokens: sequence 2048, micro-batch 4), in bf16,
// the engine's own call (RankDevice::Gemm through its cached plan) next to every algorithm
// cuBLASLt's heuristic offers for that shape (up to 32), each the median of several CUDA-event
// timings after warm-ups. Like for like: both read the same bf16 operands, the weight's shadow
// and the activations' shadows rounded once beforehand, as the model path reads them
// (cuda_gemm_cases.h); the fp32 -> bf16 rounding of the GEMM's activation operands is timed apart
// (convert_s: what a separate rounding pass costs where no kernel writes the bf16 copy).
//
//   cuda_gemm_benchmark [--quick] [--autotune] [--json FILE]
//
// Columns: engine_s (the engine's call), plan_s (the plan's algorithm alone), first_s (the
// heuristic's first), best_s (the fastest algorithm), ratio = engine_s / best_s, convert_s, and the
// TFLOP/s of the engine's call and of the best (2 m n k FLOPs). A best more than 5% faster than
// the heuristic's first is what PIPETTE_GEMM_AUTOTUNE=1 picks up; --autotune measures the engine
// with it (chosen_index: the algorithm its plan runs, in the heuristic's order, which tells whether
// two runs choose alike). --quick: 2048 tokens, fewer
// reps. The JSON is rewritten after every layer (results_file.h): a layer that throws is named
// under "errors" and the others still run; the exit status is 1 then. Without a GPU it says so and
// exits 0 (nothing to measure).
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/gemm_plan.h"
#include "cuda/kernels.h"
#include "cuda/rank_device.h"
#include "cuda/trainer.h"
#include "cuda_gemm_cases.h"
#include "results_file.h"

namespace pipette::cuda {
namespace {

struct Reps {
  int warmup = 3;
  int reps = 10;
};

std::string Trans(const GemmArgs& g) {
  return std::string(g.trans_a ? "T" : "N") + (g.trans_b ? "T" : "N");
}

// The median time of rounding `elements` fp32 values to bf16 (the engine's CastToBf16; the values
// do not change its speed).
double ConvertSeconds(RankDevice& dev, std::int64_t elements, const Reps& reps) {
  const cudaStream_t stream = dev.stream();
  void* source = nullptr;
  void* target = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&source, static_cast<std::size_t>(elements) * 4, stream));
  PIPETTE_CUDA_CHECK(cudaMemsetAsync(source, 0, static_cast<std::size_t>(elements) * 4, stream));
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&target, static_cast<std::size_t>(elements) * 2, stream));
  const double s = MedianStreamSeconds(stream, reps.warmup, reps.reps, [&] {
    kernels::CastToBf16(static_cast<const float*>(source), elements,
                        static_cast<__nv_bfloat16*>(target), stream);
  });
  PIPETTE_CUDA_CHECK(cudaFreeAsync(target, stream));
  PIPETTE_CUDA_CHECK(cudaFreeAsync(source, stream));
  return s;
}

nlohmann::ordered_json Measure(RankDevice& dev, const std::string& name, const GemmArgs& args,
                               std::int64_t convert_elements, const Reps& reps) {
  const std::int64_t roundings = dev.num_operand_roundings();
  const double engine_s =
      MedianStreamSeconds(dev.stream(), reps.warmup, reps.reps, [&] { dev.Gemm(args); });
  if (dev.num_operand_roundings() != roundings) {
    throw std::logic_error(name + ": the engine's call rounded an operand while timed");
  }
  int chosen = 0;
  const std::vector<double> algos = dev.TimeGemmAlgos(args, 32, reps.warmup, reps.reps, &chosen);
  const auto best = std::min_element(algos.begin(), algos.end());
  const double best_s = *best, flops = 2.0 * args.m * args.n * args.k;
  const double first_s = algos.front(), plan_s = algos[chosen];
  const double convert_s = ConvertSeconds(dev, convert_elements, reps);
  fmt::print(
      "{:<24} {:>6} {:>6} {:>6} {:>3} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>6.3f} "
      "{:>10.1f} {:>7.1f} {:>7.1f} {:>4} {:>4}\n",
      name, args.m, args.n, args.k, Trans(args), engine_s * 1e6, plan_s * 1e6, first_s * 1e6,
      best_s * 1e6, engine_s / best_s, convert_s * 1e6, flops / engine_s * 1e-12,
      flops / best_s * 1e-12, static_cast<int>(algos.size()), best - algos.begin());
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
          {"convert_s", convert_s},
          {"convert_elements", convert_elements},
          {"tflops", flops / engine_s * 1e-12},
          {"best_tflops", flops / best_s * 1e-12},
          {"algos", algos.size()},
          {"chosen_index", chosen},
          {"best_index", best - algos.begin()},
          {"best_beats_first_by_5pct", best_s < first_s / 1.05}};
}

void PrintHeader(int tokens, const Reps& reps) {
  fmt::print(
      "# bf16 operands (rounded beforehand, as the model path reads them), fp32 accumulation "
      "and output; {} tokens; median of {} after {} warm-ups\n",
      tokens, reps.reps, reps.warmup);
  const char* row =
      "{:<24} {:>6} {:>6} {:>6} {:>3} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10} {:>7} {:>7} {:>4} "
      "{:>4}\n";
  fmt::print(fmt::runtime(row), "# gemm", "m", "n", "k", "op", "engine", "plan", "first", "best",
             "ratio", "convert", "engine", "best", "alg", "best");
  fmt::print(fmt::runtime(row), "#", "", "", "", "", "us", "us", "us", "us", "", "us", "TFLOP/s",
             "TFLOP/s", "n", "idx");
}

// Every layer's F, I and W into results["gemms"], the file rewritten after each layer.
void Run(bool quick, bool autotune, ResultsFile& results) {
  const int tokens = quick ? 2048 : 8192;
  const Reps reps = quick ? Reps{1, 3} : Reps{3, 10};
  results.json()["tokens"] = tokens;
  results.json()["precision"] = "bf16";
  results.json()["autotune"] = autotune;
  results.json()["gemms"] = nlohmann::ordered_json::array();
  PrintHeader(tokens, reps);
  for (const StageModel& model : BenchmarkStages()) {
    for (const LinearLayer& layer : model.layers) {
      const std::string prefix = model.name + "." + layer.name;
      results.Run(prefix, [&] {
        // One rank per layer: its tensors, plans and shadows go with it.
        RankDevice dev(GemmPrecision::kBf16, autotune);
        LayerTensors t(dev, tokens, layer);
        const LayerGemms g = MakeLayerGemms(dev, layer, t);
        nlohmann::ordered_json& gemms = results.json()["gemms"];
        gemms.push_back(Measure(dev, prefix + ".F", g.f, g.f_convert, reps));
        gemms.push_back(Measure(dev, prefix + ".I", g.i, g.i_convert, reps));
        gemms.push_back(Measure(dev, prefix + ".W", g.w, g.w_convert, reps));
      });
    }
  }
}

}  // namespace
}  // namespace pipette::cuda

int main(int argc, char** argv) {
  using namespace pipette;
  using namespace pipette::cuda;
  bool quick = false, autotune = false;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--autotune") == 0) {
      autotune = true;
    } else if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      fmt::print(stderr, "usage: cuda_gemm_benchmark [--quick] [--autotune] [--json FILE]\n");
      return 2;
    }
  }
  if (DeviceCount() == 0) {
    fmt::print("no CUDA device: nothing to measure\n");
    return 0;
  }
  ResultsFile results(json_path);
  results.json()["device"] = DeviceDescription();
  fmt::print("# cuda_gemm_benchmark on {}\n", DeviceDescription());
  Run(quick, autotune, results);
  return results.failed() ? 1 : 0;
}
