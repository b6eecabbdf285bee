// CPU engine compute efficiency: a rank's F, I and W passes against bare OpenBLAS sgemm on exactly
// the GEMM calls those passes make (the model's shapes, recorded from one pass and replayed), in
// the same run and interleaved, one thread. efficiency = sgemm time / engine time: the share of
// the engine's compute time that the GEMMs alone would take. The engine also runs attention's
// softmax, LayerNorm, GELU, the loss and bias adds, which sgemm does not; those are the gap.
//
//   build/benchmarks/cpu_engine_benchmark            (counters: efficiency, engine_gflops, ...)
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <vector>

#include "cpu/gpt.h"
#include "pipette/engine/corpus.h"

namespace pipette::cpu {
namespace {

struct Shape {
  const char* name;
  DecoderSpec spec;
  int micro_batch_size;
  int seq;
};

Shape ShapeOf(int index) {
  DecoderSpec tiny = TinyDecoder();
  DecoderSpec wide = TinyDecoder();  // a wider block, closer to real GEMM sizes
  wide.name = "wide";
  wide.hidden = 512;
  wide.heads = 8;
  wide.kv_heads = 8;
  wide.ffn_hidden = 2048;
  wide.vocab = 512;
  wide.max_positions = 128;
  switch (index) {
    case 0:
      return {"tiny (h 64, 4 x 32 tokens)", tiny, 4, 32};
    default:
      return {"wide (h 512, 4 x 128 tokens)", wide, 4, 128};
  }
}

// The layers of one rank: a block (attention and MLP halves) or the whole model.
ModuleChain MakeChain(const DecoderSpec& spec, bool whole_model) {
  ModuleChain chain;
  const std::vector<std::string> layers =
      whole_model ? LayerNames(spec) : std::vector<std::string>{"block0.attn", "block0.mlp"};
  for (const std::string& layer : layers) chain.Add(std::move(MakeModule(spec, layer, 1).value()));
  return chain;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void BM_RankCompute(benchmark::State& state) {
  openblas_set_num_threads(1);
  const Shape shape = ShapeOf(static_cast<int>(state.range(0)));
  const bool whole = state.range(1) != 0;
  ModuleChain chain = MakeChain(shape.spec, whole);
  const Batch batch = MakeBatch(shape.spec.vocab, 0, shape.micro_batch_size, shape.seq, 1e-3f);
  const int tokens = batch.num_tokens();
  auto input = [&] {  // a block's input activation, or nothing for the whole model
    Tensor x;
    if (!whole) {
      x = Tensor(tokens, shape.spec.hidden);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i % 17) - 8) * 0.1f;
    }
    return x;
  };
  auto pass = [&] {  // F, then I, then W of one microbatch
    std::vector<Cache> caches;
    Tensor y = chain.Forward(batch, input(), caches);
    Tensor dy;
    if (!whole) {
      dy = Tensor(y.rows(), y.cols());
      for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = 1e-3f * static_cast<float>(i % 7);
    }
    benchmark::DoNotOptimize(chain.InputGrad(batch, std::move(dy), caches));
    chain.WeightGrad(batch, caches);
  };

  // The GEMM calls of one pass, and buffers to replay them on bare sgemm.
  std::vector<GemmCall> calls;
  RecordGemmCalls(&calls);
  pass();
  RecordGemmCalls(nullptr);
  double gemm_flops = 0;
  std::vector<std::vector<float>> a, b, c;
  for (const GemmCall& g : calls) {
    gemm_flops += g.flops();
    a.emplace_back(static_cast<std::size_t>(g.trans_a ? g.k : g.m) * g.lda, 0.01f);
    b.emplace_back(static_cast<std::size_t>(g.trans_b ? g.n : g.k) * g.ldb, 0.02f);
    c.emplace_back(static_cast<std::size_t>(g.m) * g.ldc, 0.0f);
  }
  auto replay = [&] {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const GemmCall& g = calls[i];
      cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
                  g.trans_b ? CblasTrans : CblasNoTrans, g.m, g.n, g.k, 1.0f, a[i].data(), g.lda,
                  b[i].data(), g.ldb, g.beta, c[i].data(), g.ldc);
    }
    benchmark::ClobberMemory();
  };

  pass();  // warm: the allocator and the caches have seen every buffer once
  replay();
  double engine_s = 0, sgemm_s = 0;
  for (auto _ : state) {
    auto t = std::chrono::steady_clock::now();
    pass();
    engine_s += Seconds(t);
    t = std::chrono::steady_clock::now();
    replay();
    sgemm_s += Seconds(t);
  }
  const double n = static_cast<double>(state.iterations());
  state.SetLabel(std::string(shape.name) + (whole ? ", whole model" : ", one block"));
  state.counters["gemm_calls"] = static_cast<double>(calls.size());
  state.counters["engine_ms"] = engine_s / n * 1e3;
  state.counters["sgemm_ms"] = sgemm_s / n * 1e3;
  state.counters["engine_gflops"] = gemm_flops * n / engine_s / 1e9;
  state.counters["sgemm_gflops"] = gemm_flops * n / sgemm_s / 1e9;
  state.counters["efficiency"] = sgemm_s / engine_s;
}

BENCHMARK(BM_RankCompute)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"shape", "whole"})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

}  // namespace
}  // namespace pipette::cpu

BENCHMARK_MAIN();
