// The CUDA engine on a GPU, against issue 15's targets ("CUDA engine speed"): what one pipeline
// stage's instructions cost and the model FLOP utilisation they reach, the split backward against
// a fused B, and what each schedule's bubble measures in virtual-ranks mode next to the one
// `pipette schedule` predicts for the measured costs.
//
//   cuda_engine_benchmark [--quick] [--json FILE] [--blocks N] [--iters N] [--no-bubbles]
//                         [--concurrent RANKS]
//
// Part 1, stages: a GPT-3-1.3B-shaped stage (preset gpt3-1.3b: h 2048, 16 heads, ffn 8192) and a
// Llama-3.2-1B-shaped one (llama3.2-1b: h 2048, 32 heads, 8 KV heads, SwiGLU 8192), s 2048,
// micro-batch 4, `--blocks` decoder blocks each (default 1), bf16 GEMMs. F, I and W each timed
// with CUDA events, and B (InputGrad then WeightGrad back to back, one event pair around both: a
// fused backward as the engine runs a B instruction) in separate iterations; medians of `--iters`
// (default 10, --quick 3) after 2 warm-ups. Model FLOPs as llm.c and Megatron-LM count them
// (pipette/engine/flops.h: per token per block forward 24 h^2 + 4 s h for GPT, backward 2x; no
// causal discount), TFLOP/s of F + I + W and MFU against the device's dense bf16 peak (unknown
// device: MFU unknown), and (I + W) / B. The attention module (norm, QKV, attention core,
// projection, residual) of block 0 is timed alone as well (for the comparison with cuDNN's
// attention, scripts/gpu/attention_reference.py). Memory per stage: what the rank's meter holds
// before F (weights, gradients, bf16 shadows), after F and after I, and at its peak through W, with
// the device pool's high-water mark, next to the model layer's amounts for the same layers
// (activations F keeps, the weight-GEMM inputs I keeps for W, weights + gradients + optimizer).
// `--concurrent RANKS` times each stage again in that many ranks at once on the one GPU (threads
// with their own devices and chains, as --virtual-ranks runs them): each pass's slowdown against
// the stage alone, what the simulator must know to predict virtual ranks.
// Part 2, bubbles: every built-in schedule at p = 4, m = 8 on an 8-block GPT (h 512, s 512, a model
// file written to $TMPDIR), 3 steps in virtual-ranks mode; the last step's measured bubble
// 1 - busy / (p * makespan) from the trace, and evaluate()'s bubble for the run's own median stage
// costs (pipette schedule's model). The fidelity check against `pipette simulate --costs-from` is
// scripts/gpu/fidelity.py's.
// The JSON is rewritten after every stage and every schedule (results_file.h): a killed run keeps
// what it measured, and a part that throws (a CUDA error, a plan without an algorithm) is named
// with its error under "errors" while the others still run; the exit status is 1 then.
// Without a GPU it says so and exits 0 (nothing to measure).
#include <fmt/core.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device_tensor.h"
#include "cuda/model.h"
#include "cuda/rank_device.h"
#include "cuda/trainer.h"
#include "pipette/cost/memory_model.h"
#include "pipette/engine/flops.h"
#include "pipette/engine/measured_costs.h"
#include "pipette/model/decoder.h"
#include "pipette/model/model_presets.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_generator.h"
#include "results_file.h"

namespace pipette::cuda {
namespace {

struct Options {
  bool quick = false;
  bool bubbles = true;
  int blocks = 1;
  int iters = 10;
  int concurrent = 0;  // > 1: the stage also timed in that many ranks at once (virtual ranks)
  std::string json_path;
};

struct StageShape {
  std::string name;
  const DecoderSpec* spec = nullptr;
  int micro_batch = 4;
  int seq = 2048;
};

// Median milliseconds of F, I, W (each timed alone) and B (I then W under one event pair).
struct PassTimes {
  double f = 0, i = 0, w = 0, b = 0;
  double fiw() const { return f + i + w; }
};

// What the rank's meter (every DeviceTensor: weights, gradients, bf16 shadows, activations) held
// around one microbatch's F, I and W, and the device memory pool's high-water mark over the stage
// (the meter's tensors plus what cuBLASLt and the allocator keep).
struct MemoryUse {
  std::int64_t held = 0;     // before F: the chain's weights, gradients and shadows
  std::int64_t after_f = 0;  // after F, less `held`: what F keeps for the backward (and its output)
  std::int64_t after_i = 0;  // after I, less `held`: what I keeps for W (and its input gradient)
  std::int64_t peak = 0;     // the peak from F to the end of W, less `held`
  std::int64_t pool_high = 0;
};

double MedianMs(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0 : ms[ms.size() / 2];
}

// The chain of `parts` ("attn", "mlp") of blocks 0..blocks-1 of `spec`, in order.
DeviceChain MakeChain(const DecoderSpec& spec, int blocks, const std::vector<const char*>& parts,
                      RankDevice& dev) {
  DeviceChain chain;
  for (int i = 0; i < blocks; ++i) {
    for (const char* part : parts) {
      chain.Add(
          std::move(MakeDeviceModule(spec, fmt::format("block{}.{}", i, part), 1, dev).value()));
    }
  }
  return chain;
}

// Times `chain` on a microbatch of `shape`: each iteration runs F, I, W with events between them,
// then F again and B (I and W back to back) under one event pair. 2 warm-ups, then `iters`.
PassTimes TimeChain(DeviceChain& chain, RankDevice& dev, const StageShape& shape, int iters,
                    MemoryUse* memory = nullptr) {
  Batch host;
  host.sequences = shape.micro_batch;
  host.seq = shape.seq;
  const DeviceBatch batch{&host, nullptr, nullptr};
  const int rows = shape.micro_batch * shape.seq;
  std::vector<float> values(static_cast<std::size_t>(rows) * shape.spec->hidden);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  for (float& v : values) v = normal(rng);
  const DeviceTensor x = dev.Upload(values.data(), rows, shape.spec->hidden);
  cudaEvent_t ev[6];
  for (cudaEvent_t& e : ev) cudaEventCreate(&e);
  std::vector<float> f, i, w, b;
  for (int it = 0; it < iters + 2; ++it) {
    std::vector<DeviceCache> split, fused;
    // Inputs are copied before the first event: the events time the passes alone. The meter
    // counts at allocation (host order), so reading it needs no synchronisation.
    DeviceMeter& meter = dev.meter();
    const std::int64_t held = meter.live;
    DeviceTensor in = dev.Clone(x), grad = dev.Clone(x);
    meter.ResetPeak();
    cudaEventRecord(ev[0], dev.stream());
    DeviceTensor y = chain.Forward(batch, std::move(in), split);
    const std::int64_t after_f = meter.live - held;
    cudaEventRecord(ev[1], dev.stream());
    DeviceTensor dx = chain.InputGrad(batch, std::move(grad), split);
    const std::int64_t after_i = meter.live - held;
    cudaEventRecord(ev[2], dev.stream());
    chain.WeightGrad(batch, split);
    cudaEventRecord(ev[3], dev.stream());
    if (memory != nullptr) *memory = {held, after_f, after_i, meter.peak - held, 0};
    split.clear();
    DeviceTensor y2 = chain.Forward(batch, dev.Clone(x), fused);
    DeviceTensor dy = dev.Clone(x);
    cudaEventRecord(ev[4], dev.stream());
    DeviceTensor dx2 = chain.InputGrad(batch, std::move(dy), fused);
    chain.WeightGrad(batch, fused);
    cudaEventRecord(ev[5], dev.stream());
    dev.Synchronize();
    if (it < 2) continue;  // warm-up
    float ms[4];
    for (int k = 0; k < 3; ++k) cudaEventElapsedTime(&ms[k], ev[k], ev[k + 1]);
    cudaEventElapsedTime(&ms[3], ev[4], ev[5]);
    f.push_back(ms[0]);
    i.push_back(ms[1]);
    w.push_back(ms[2]);
    b.push_back(ms[3]);
  }
  for (cudaEvent_t& e : ev) cudaEventDestroy(e);
  return {MedianMs(f), MedianMs(i), MedianMs(w), MedianMs(b)};
}

nlohmann::ordered_json TimesJson(const PassTimes& t) {
  return {{"f_ms", t.f}, {"i_ms", t.i}, {"w_ms", t.w}, {"b_ms", t.b}, {"fiw_ms", t.fiw()}};
}

// The device memory pool's high-water mark of used bytes since the last reset (the engine
// allocates in stream order from the device's default pool).
std::int64_t PoolUsedHigh(bool reset) {
  int device = 0;
  cudaMemPool_t pool;
  cudaGetDevice(&device);
  if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) return -1;
  std::uint64_t bytes = 0;  // the attribute is a 64-bit unsigned value
  if (reset) {
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &bytes);
    return 0;
  }
  cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &bytes);
  return static_cast<std::int64_t>(bytes);
}

// The model layer's amounts for the stage's layers (block{i}.attn and .mlp, i < blocks) at the
// stage's micro-batch and sequence: parameters, and per microbatch the activations F keeps for the
// backward (Korthikanti et al., as `pipette simulate` counts them) and the weight-GEMM inputs I
// keeps for W, in the training dtype (bf16) and at fp32 (the engine keeps fp32 tensors).
nlohmann::ordered_json ModelMemoryJson(const StageShape& shape, int blocks) {
  nlohmann::ordered_json j;
  for (const DType dtype : {DType::kBF16, DType::kFP32}) {
    Result<ModelGraph> model =
        BuildDecoder(*shape.spec, Workload{shape.micro_batch, shape.seq, dtype});
    if (!model.ok()) throw std::runtime_error(model.status().message());
    std::int64_t params = 0, activations = 0, wgrad_inputs = 0;
    for (std::size_t id = 0; id < model->num_layers(); ++id) {
      const Layer& layer = model->layer(id);
      bool in_stage = false;
      for (int b = 0; b < blocks; ++b) {
        in_stage |= layer.name == fmt::format("block{}.attn", b) ||
                    layer.name == fmt::format("block{}.mlp", b);
      }
      if (!in_stage) continue;
      params += layer.params;
      activations += layer.activation_bytes;
      wgrad_inputs += layer.wgrad_input_bytes;
    }
    ParallelConfig config;
    config.dtype = dtype;
    const MemoryBreakdown fixed = MemoryModel(config).Static(params);
    j["params"] = params;
    j[std::string(DTypeName(dtype))] = {{"activation_bytes", activations},
                                        {"wgrad_input_bytes", wgrad_inputs},
                                        {"weights_gradients_optimizer_bytes", fixed.total()}};
  }
  return j;
}

nlohmann::ordered_json MemoryJson(const StageShape& shape, int blocks, const MemoryUse& m) {
  return {{"measured",
           {{"held_bytes", m.held},
            {"after_f_bytes", m.after_f},
            {"after_i_bytes", m.after_i},
            {"peak_bytes", m.peak},
            {"pool_used_high_bytes", m.pool_high}}},
          {"model", ModelMemoryJson(shape, blocks)}};
}

// One stage's record: times, model FLOPs, rate, MFU (null for an unknown device), (I + W) / B.
nlohmann::ordered_json StageJson(const StageShape& shape, int blocks, const PassTimes& stage,
                                 const PassTimes& attn, const std::optional<DevicePeak>& peak) {
  const double tokens = static_cast<double>(shape.micro_batch) * shape.seq;
  const PassFlops flops = StageFlops(*shape.spec, shape.seq, tokens, blocks, false);
  const double tflops = flops.total() / (stage.fiw() * 1e-3) / 1e12;
  nlohmann::ordered_json j = {{"stage", shape.name}, {"preset", shape.spec->name},
                              {"blocks", blocks},    {"micro_batch", shape.micro_batch},
                              {"seq", shape.seq},    {"tokens", tokens},
                              {"dtype", "bf16"}};
  j.update(TimesJson(stage));
  j["flops"] = {{"forward", flops.forward}, {"backward", flops.backward}, {"total", flops.total()}};
  j["tflops"] = tflops;
  j["mfu"] = peak
                 ? nlohmann::ordered_json(Mfu(flops.total(), stage.fiw() * 1e-3, peak->bf16_tflops))
                 : nlohmann::ordered_json(nullptr);
  j["iw_over_b"] = stage.b > 0 ? (stage.i + stage.w) / stage.b : 0.0;
  const double core = tokens * AttentionCoreForwardFlopsPerToken(*shape.spec, shape.seq);
  j["attention_module"] = TimesJson(attn);
  j["attention_module"]["core_flops"] = {{"forward", core}, {"backward", 2 * core}};
  return j;
}

// The stage timed in `ranks` ranks at once on this GPU, as virtual ranks run: each rank a thread
// with its own RankDevice (stream, plans, shadows) and chain, all starting their iterations
// together (a barrier). Returns each rank's medians.
std::vector<PassTimes> TimeConcurrently(const StageShape& shape, int blocks, int ranks, int iters) {
  std::vector<PassTimes> times(static_cast<std::size_t>(ranks));
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  std::barrier start(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      bool arrived = false;
      try {
        RankDevice dev(GemmPrecision::kBf16);
        DeviceChain chain = MakeChain(*shape.spec, blocks, {"attn", "mlp"}, dev);
        dev.Synchronize();
        start.arrive_and_wait();
        arrived = true;
        times[static_cast<std::size_t>(r)] = TimeChain(chain, dev, shape, iters);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        if (!arrived) start.arrive_and_drop();  // the others do not wait for this rank
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) {
    if (!e.empty()) throw std::runtime_error("a concurrent rank: " + e);
  }
  return times;
}

// The mean of the ranks' medians, and each pass's ratio to the stage timed alone.
nlohmann::ordered_json ConcurrentJson(const std::vector<PassTimes>& ranks, const PassTimes& alone) {
  PassTimes mean;
  for (const PassTimes& t : ranks) {
    mean.f += t.f / static_cast<double>(ranks.size());
    mean.i += t.i / static_cast<double>(ranks.size());
    mean.w += t.w / static_cast<double>(ranks.size());
    mean.b += t.b / static_cast<double>(ranks.size());
  }
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  nlohmann::ordered_json j = {{"ranks", ranks.size()}};
  j.update(TimesJson(mean));
  j["over_alone"] = {{"f", ratio(mean.f, alone.f)},
                     {"i", ratio(mean.i, alone.i)},
                     {"w", ratio(mean.w, alone.w)},
                     {"b", ratio(mean.b, alone.b)}};
  return j;
}

// Each stage's record into results["stages"] (the file rewritten after each; a stage that throws
// is named under "errors" and the next one still runs).
void Stages(const Options& o, const std::optional<DevicePeak>& peak, ResultsFile& results) {
  const std::vector<StageShape> shapes = {{"gpt3-1.3b", FindDecoderPreset("gpt3-1.3b")},
                                          {"llama3.2-1b", FindDecoderPreset("llama3.2-1b")}};
  results.json()["stages"] = nlohmann::ordered_json::array();
  fmt::print(
      "# one stage of {} block(s), s 2048, micro-batch 4, bf16 (median of {} after 2 "
      "warm-ups); peak {}\n",
      o.blocks, o.iters,
      peak ? fmt::format("{} TFLOP/s ({})", peak->bf16_tflops, peak->device)
           : std::string("unknown for this device: MFU unknown"));
  fmt::print("{:<12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>8}\n", "stage", "F ms", "I ms",
             "W ms", "B ms", "F+I+W ms", "TFLOP/s", "MFU", "(I+W)/B");
  for (const StageShape& shape : shapes) {
    results.Run("stage " + shape.name, [&] {
      RankDevice dev(GemmPrecision::kBf16);
      DeviceChain stage = MakeChain(*shape.spec, o.blocks, {"attn", "mlp"}, dev);
      MemoryUse memory;
      PoolUsedHigh(/*reset=*/true);
      const PassTimes t = TimeChain(stage, dev, shape, o.iters, &memory);
      memory.pool_high = PoolUsedHigh(/*reset=*/false);
      DeviceChain attn_chain = MakeChain(*shape.spec, 1, {"attn"}, dev);
      const PassTimes attn = TimeChain(attn_chain, dev, shape, o.iters);
      nlohmann::ordered_json j = StageJson(shape, o.blocks, t, attn, peak);
      const std::string mfu =
          j["mfu"].is_null() ? "unknown" : fmt::format("{:.1f}%", 100 * j["mfu"].get<double>());
      fmt::print("{:<12} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>8.1f} {:>7} {:>8.3f}\n",
                 shape.name, t.f, t.i, t.w, t.b, t.fiw(), j["tflops"].get<double>(), mfu,
                 j["iw_over_b"].get<double>());
      j["memory"] = MemoryJson(shape, o.blocks, memory);
      if (o.concurrent > 1) {
        j["concurrent"] =
            ConcurrentJson(TimeConcurrently(shape, o.blocks, o.concurrent, o.iters), t);
        const nlohmann::ordered_json& c = j["concurrent"]["over_alone"];
        fmt::print("{:<12} {} ranks at once: F {:.2f}x, I {:.2f}x, W {:.2f}x, B {:.2f}x alone\n",
                   "", o.concurrent, c["f"].get<double>(), c["i"].get<double>(),
                   c["w"].get<double>(), c["b"].get<double>());
      }
      const nlohmann::ordered_json& bf16 = j["memory"]["model"]["bf16"];
      fmt::print(
          "{:<12} memory MiB: held {:.0f}, after F {:.0f} (model: activations {:.0f} bf16), after "
          "I {:.0f} (model: W's inputs {:.0f} bf16), peak {:.0f}, pool high-water {:.0f}\n",
          "", memory.held / 1048576.0, memory.after_f / 1048576.0,
          bf16["activation_bytes"].get<double>() / 1048576.0, memory.after_i / 1048576.0,
          bf16["wgrad_input_bytes"].get<double>() / 1048576.0, memory.peak / 1048576.0,
          memory.pool_high / 1048576.0);
      results.json()["stages"].push_back(std::move(j));
    });
  }
}

// Evaluate()'s costs from the run's measured per-stage medians: a stage timed only as fused B
// gets I = B, W = 0, and its B as the full backward.
Costs CostsOf(const std::vector<MeasuredStageCost>& measured) {
  Costs costs;
  for (const MeasuredStageCost& m : measured) {
    const double b = m.b ? *m.b : m.i.value_or(0) + m.w.value_or(0);
    costs.stages.push_back({m.f.value_or(0), m.i.value_or(b), m.w.value_or(0)});
    costs.full_backward.push_back(b);
  }
  return costs;
}

// The last traced step's bubble: 1 - sum of compute time / (p * (last end - first start)).
double MeasuredBubble(const std::vector<TraceEvent>& trace, int p, int step) {
  double busy = 0, first = 1e300, last = -1e300;
  for (const TraceEvent& e : trace) {
    if (e.step != step || !IsCompute(e.action.kind)) continue;
    busy += e.end - e.start;
    first = std::min(first, e.start);
    last = std::max(last, e.end);
  }
  return last > first ? 1 - busy / (p * (last - first)) : 0;
}

// A GPT-style model file of `blocks` blocks of width `hidden` (the engines train model files), in
// the temporary directory; returns its path.
std::string WriteBubbleModel(int blocks, int hidden, int heads, int vocab, int context) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/pipette-bubble-model.toml";
  std::ofstream out(path);
  out << "name = \"bubble-gpt\"\n\n[[layer]]\nname = \"embedding\"\ntype = \"embedding\"\n"
      << "vocab = " << vocab << "\nhidden = " << hidden << "\npositions = " << context << "\n";
  for (int b = 0; b < blocks; ++b) {
    out << fmt::format(
        "\n[[layer]]\nname = \"block{0}.attn\"\ntype = \"attention\"\nhidden = {1}\nheads = "
        "{2}\nbias = true\n\n[[layer]]\nname = \"block{0}.mlp\"\ntype = \"mlp\"\nhidden = "
        "{1}\nffn_hidden = {3}\nbias = true\n",
        b, hidden, heads, 4 * hidden);
  }
  out << fmt::format(
      "\n[[layer]]\nname = \"final_norm\"\ntype = \"norm\"\nhidden = {0}\nbias = true\n\n"
      "[[layer]]\nname = \"head\"\ntype = \"head\"\nhidden = {0}\nvocab = {1}\n\n[[layer]]\n"
      "name = \"loss\"\ntype = \"loss\"\nvocab = {1}\n",
      hidden, vocab);
  return path;
}

// One schedule's bubble record: measured and predicted.
nlohmann::ordered_json Bubble(const ScheduleGenerator& generator, const std::string& model,
                              bool quick) {
  TrainOptions o;
  o.model = model;
  o.schedule = std::string(generator.name());
  o.p = 4;
  o.m = 8;
  o.steps = quick ? 2 : 3;
  o.micro_batch_size = 2;
  o.virtual_ranks = true;
  Result<TrainPlan> plan = PlanTraining(o);
  if (!plan.ok()) throw std::runtime_error(plan.status().message());
  Result<CudaTrainResult> run = TrainVirtualRanks(*plan, o);
  if (!run.ok()) throw std::runtime_error(run.status().message());
  const TrainReport& r = run->report;
  const double measured = MeasuredBubble(r.trace, plan->p(), o.steps - 1);
  const Result<Evaluation> predicted =
      Evaluate(plan->program, CostsOf(MeasureStageCosts(r.trace, plan->schedule.num_stages())), {});
  const double bubble = predicted.ok() ? predicted->bubble_ratio : -1;
  fmt::print("{:<28} {:>10.3f} {:>10.3f} {:>12.3f}\n", o.schedule, measured, bubble,
             r.step_times.back() * 1e3);
  return {{"schedule", o.schedule},
          {"measured_bubble", measured},
          {"predicted_bubble", bubble},
          {"step_ms", r.step_times.back() * 1e3}};
}

// Every schedule's record into results["bubbles"], the file rewritten after each.
void Bubbles(bool quick, ResultsFile& results) {
  results.json()["bubbles"] = nlohmann::ordered_json::array();
  const std::string model = WriteBubbleModel(8, 512, 8, 4096, 512);
  fmt::print("\n# bubble per schedule, virtual ranks p=4 m=8 (8 blocks, h 512, s 512, mb 2)\n");
  fmt::print("{:<28} {:>10} {:>10} {:>12}\n", "schedule", "measured", "predicted", "step ms");
  for (const ScheduleGenerator* generator : AllScheduleGenerators()) {
    results.Run("bubble " + std::string(generator->name()),
                [&] { results.json()["bubbles"].push_back(Bubble(*generator, model, quick)); });
  }
}

}  // namespace
}  // namespace pipette::cuda

int main(int argc, char** argv) {
  using namespace pipette;
  using namespace pipette::cuda;
  Options o;
  bool iters_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--concurrent" && has_value) {
      o.concurrent = std::atoi(argv[++i]);
    } else if (arg == "--no-bubbles") {
      o.bubbles = false;
    } else if (arg == "--json" && has_value) {
      o.json_path = argv[++i];
    } else if (arg == "--blocks" && has_value) {
      o.blocks = std::atoi(argv[++i]);
    } else if (arg == "--iters" && has_value) {
      o.iters = std::atoi(argv[++i]);
      iters_given = true;
    } else {
      fmt::print(stderr,
                 "usage: cuda_engine_benchmark [--quick] [--json FILE] [--blocks N] [--iters N] "
                 "[--no-bubbles] [--concurrent RANKS]\n");
      return 2;
    }
  }
  if (o.quick && !iters_given) o.iters = 3;
  if (o.blocks < 1 || o.iters < 1 || o.concurrent < 0 || o.concurrent > 64) {
    fmt::print(stderr,
               "cuda_engine_benchmark: --blocks and --iters must be >= 1, --concurrent in "
               "[0, 64]\n");
    return 2;
  }
  const std::string device = DeviceDescription();
  fmt::print("# cuda_engine_benchmark on {}\n", device);
  if (DeviceCount() == 0) {
    fmt::print("no CUDA device: nothing to measure\n");
    return 0;
  }
  const std::optional<DevicePeak> peak = DenseBf16Peak(device);
  ResultsFile results(o.json_path);  // rewritten after every stage and schedule
  nlohmann::ordered_json& json = results.json();
  json["device"] = device;
  json["peak"] = peak ? nlohmann::ordered_json{{"device", peak->device},
                                               {"bf16_tflops", peak->bf16_tflops},
                                               {"source", peak->source}}
                      : nlohmann::ordered_json(nullptr);
  Stages(o, peak, results);
  if (o.bubbles) Bubbles(o.quick, results);
  return results.failed() ? 1 : 0;
}
