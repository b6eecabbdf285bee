// The CUDA engine on a GPU: what one pipeline stage's instructions cost, and what each schedule's
// bubble measures in virtual-ranks mode next to the one `pipette schedule` predicts for the
// measured costs. Correctness and runnability are the issue "The CUDA/NCCL engine"'s; the speed
// targets (model FLOP utilisation, GEMMs against cuBLASLt's best) belong to "CUDA engine speed".
//
//   cuda_engine_benchmark [--quick] [--json FILE]
//
// Part 1, per-instruction times: a stage of GPT blocks (h 1024, 16 heads, s 1024, micro-batch 4,
// 4 blocks) and of Llama blocks (h 2048, 32 heads, 8 KV heads, SwiGLU 8192, s 1024, micro-batch 2,
// 2 blocks), F, I and W each timed with CUDA events (median of 10 after 2 warm-ups), in fp32 and
// bf16, with the model layer's FLOPs per pass and the rate they imply.
// Part 2, bubbles: every built-in schedule at p = 4, m = 8 on an 8-block GPT (h 512, s 512, a model
// file written to $TMPDIR), 3 steps in
// virtual-ranks mode; the last step's measured bubble 1 - busy / (p * makespan) from the trace, and
// evaluate()'s bubble for the run's own median stage costs (pipette schedule's model).
// Without a GPU it says so and exits 0 (nothing to measure).
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cuda/device.h"
#include "cuda/model.h"
#include "cuda/trainer.h"
#include "pipette/engine/measured_costs.h"
#include "pipette/model/decoder.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/registry.h"
#include "pipette/schedule/schedule_generator.h"

namespace pipette::cuda {
namespace {

struct StageShape {
  std::string name;
  DecoderSpec spec;
  int blocks = 0;
  int micro_batch = 0;
  int seq = 0;
};

DecoderSpec Spec(std::string name, int hidden, int heads, int kv_heads, int ffn, bool llama) {
  DecoderSpec s;
  s.name = std::move(name);
  s.layers = 24;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.ffn_hidden = ffn;
  s.vocab = 32000;
  s.bias = !llama;
  s.gated_mlp = llama;
  s.learned_positions = !llama;
  s.max_positions = 2048;
  return s;
}

// FLOPs of one microbatch's F, I and W over the stage's blocks (the model layer's formulas).
std::vector<double> StageFlops(const StageShape& shape) {
  std::vector<double> flops(3, 0);
  const Result<ModelGraph> graph =
      BuildDecoder(shape.spec, Workload{shape.micro_batch, shape.seq, DType::kFP32});
  if (!graph.ok()) return flops;
  for (int i = 0; i < shape.blocks; ++i) {
    for (const char* part : {"attn", "mlp"}) {
      const std::string name = fmt::format("block{}.{}", i, part);
      for (std::size_t id = 0; id < graph->num_layers(); ++id) {
        const Layer& layer = graph->layer(static_cast<LayerId>(id));
        if (layer.name != name) continue;
        flops[0] += layer.fwd_flops;
        flops[1] += layer.igrad_flops;
        flops[2] += layer.wgrad_flops;
      }
    }
  }
  return flops;
}

double MedianMs(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Times F, I and W of the stage (milliseconds, medians).
std::vector<double> TimeStage(const StageShape& shape, GemmPrecision precision, int iters) {
  RankDevice dev(precision);
  DeviceChain chain;
  for (int i = 0; i < shape.blocks; ++i) {
    for (const char* part : {"attn", "mlp"}) {
      chain.Add(std::move(
          MakeDeviceModule(shape.spec, fmt::format("block{}.{}", i, part), 1, dev).value()));
    }
  }
  Batch host;
  host.sequences = shape.micro_batch;
  host.seq = shape.seq;
  const DeviceBatch batch{&host, nullptr, nullptr};
  const int rows = shape.micro_batch * shape.seq;
  std::vector<float> values(static_cast<std::size_t>(rows) * shape.spec.hidden);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  for (float& v : values) v = normal(rng);
  const DeviceTensor x = dev.Upload(values.data(), rows, shape.spec.hidden);
  const DeviceTensor dy = dev.Upload(values.data(), rows, shape.spec.hidden);
  cudaEvent_t ev[4];
  for (cudaEvent_t& e : ev) cudaEventCreate(&e);
  std::vector<float> f, i, w;
  for (int it = 0; it < iters + 2; ++it) {
    std::vector<DeviceCache> caches;
    DeviceTensor in = dev.Clone(x), grad = dev.Clone(dy);
    cudaEventRecord(ev[0], dev.stream());
    DeviceTensor y = chain.Forward(batch, std::move(in), caches);
    cudaEventRecord(ev[1], dev.stream());
    DeviceTensor dx = chain.InputGrad(batch, std::move(grad), caches);
    cudaEventRecord(ev[2], dev.stream());
    chain.WeightGrad(batch, caches);
    cudaEventRecord(ev[3], dev.stream());
    dev.Synchronize();
    if (it < 2) continue;  // warm-up
    float ms[3];
    for (int k = 0; k < 3; ++k) cudaEventElapsedTime(&ms[k], ev[k], ev[k + 1]);
    f.push_back(ms[0]);
    i.push_back(ms[1]);
    w.push_back(ms[2]);
  }
  for (cudaEvent_t& e : ev) cudaEventDestroy(e);
  return {MedianMs(f), MedianMs(i), MedianMs(w)};
}

nlohmann::ordered_json StageCosts(bool quick) {
  const std::vector<StageShape> shapes = {
      {"gpt h1024", Spec("gpt-bench", 1024, 16, 16, 4096, false), 4, 4, 1024},
      {"llama h2048 gqa", Spec("llama-bench", 2048, 32, 8, 8192, true), 2, 2, 1024}};
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  fmt::print("# per-instruction times of one stage (median of {} after 2 warm-ups)\n",
             quick ? 3 : 10);
  fmt::print("{:<18} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "stage", "dtype", "F ms", "I ms",
             "W ms", "F TF/s", "I TF/s", "W TF/s");
  for (const StageShape& shape : shapes) {
    const std::vector<double> flops = StageFlops(shape);
    for (const GemmPrecision precision : {GemmPrecision::kFp32, GemmPrecision::kBf16}) {
      const std::vector<double> ms = TimeStage(shape, precision, quick ? 3 : 10);
      const char* dtype = precision == GemmPrecision::kFp32 ? "fp32" : "bf16";
      std::vector<double> rate(3);
      for (int k = 0; k < 3; ++k) rate[k] = flops[k] / (ms[k] * 1e-3) / 1e12;
      fmt::print("{:<18} {:>5} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.1f} {:>9.1f} {:>9.1f}\n", shape.name,
                 dtype, ms[0], ms[1], ms[2], rate[0], rate[1], rate[2]);
      out.push_back({{"stage", shape.name},
                     {"dtype", dtype},
                     {"f_ms", ms[0]},
                     {"i_ms", ms[1]},
                     {"w_ms", ms[2]},
                     {"flops", flops}});
    }
  }
  return out;
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

nlohmann::ordered_json Bubbles(bool quick) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  const std::string model = WriteBubbleModel(8, 512, 8, 4096, 512);
  fmt::print("\n# bubble per schedule, virtual ranks p=4 m=8 (8 blocks, h 512, s 512, mb 2)\n");
  fmt::print("{:<28} {:>10} {:>10} {:>12}\n", "schedule", "measured", "predicted", "step ms");
  for (const ScheduleGenerator* generator : AllScheduleGenerators()) {
    TrainOptions o;
    o.model = model;
    o.schedule = std::string(generator->name());
    o.p = 4;
    o.m = 8;
    o.steps = quick ? 2 : 3;
    o.micro_batch_size = 2;
    o.virtual_ranks = true;
    Result<TrainPlan> plan = PlanTraining(o);
    if (!plan.ok()) {
      fmt::print("{:<28} {}\n", o.schedule, plan.status().message());
      continue;
    }
    Result<CudaTrainResult> run = TrainVirtualRanks(*plan, o);
    if (!run.ok()) {
      fmt::print("{:<28} failed: {}\n", o.schedule, run.status().message());
      continue;
    }
    const TrainReport& r = run->report;
    const double measured = MeasuredBubble(r.trace, plan->p(), o.steps - 1);
    const Result<Evaluation> predicted = Evaluate(
        plan->program, CostsOf(MeasureStageCosts(r.trace, plan->schedule.num_stages())), {});
    const double bubble = predicted.ok() ? predicted->bubble_ratio : -1;
    fmt::print("{:<28} {:>10.3f} {:>10.3f} {:>12.3f}\n", o.schedule, measured, bubble,
               r.step_times.back() * 1e3);
    out.push_back({{"schedule", o.schedule},
                   {"measured_bubble", measured},
                   {"predicted_bubble", bubble},
                   {"step_ms", r.step_times.back() * 1e3}});
  }
  return out;
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
  fmt::print("# cuda_engine_benchmark on {}\n", DeviceDescription());
  if (DeviceCount() == 0) return 0;
  nlohmann::ordered_json json;
  json["device"] = DeviceDescription();
  json["stage_costs"] = StageCosts(quick);
  json["bubbles"] = Bubbles(quick);
  if (!json_path.empty()) std::ofstream(json_path) << json.dump(2) << "\n";
  return 0;
}
