// Partitioning speed: a 1000-layer graph into 64 stages (the target: well under a
// second), as 64 ranks x 1 stage (bisection + greedy) and 16 ranks x 4 stages (plus the
// rank-aware refinement), and the V layout (32 ranks x 2 stages).
#include <benchmark/benchmark.h>

#include <random>

#include "pipette/partition/partitioner.h"

namespace {

using namespace pipette;

// Times straight from the layer's FLOP fields.
class FlopsAreSeconds final : public CostModel {
 public:
  LayerTimes Times(const Layer& layer) const override {
    return {layer.fwd_flops, layer.igrad_flops, layer.wgrad_flops};
  }
};

ModelGraph Chain(int layers) {
  ModelGraph g;
  g.name = "chain";
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> time(0.5, 1.5);
  for (int k = 0; k < layers; ++k) {
    Layer layer;
    layer.name = "l" + std::to_string(k);
    const double t = k == 0 || k == layers - 1 ? 20 : time(rng);  // heavy embedding and head
    layer.fwd_flops = t / 3;
    layer.igrad_flops = t / 3;
    layer.wgrad_flops = t / 3;
    const LayerId id = g.AddLayer(layer);
    if (k > 0) g.Connect(id - 1, id, 1);
  }
  return g;
}

void BM_Partition(benchmark::State& state, Placement placement) {
  const ModelGraph g = Chain(1000);
  FlopsAreSeconds cost;
  PartitionRequest request;
  double balance = 0;
  for (auto _ : state) {
    Result<StagePlan> plan = Partition(g, placement, cost, request);
    balance = plan->rank_balance();
    benchmark::DoNotOptimize(balance);
  }
  state.counters["rank_balance"] = balance;
}

BENCHMARK_CAPTURE(BM_Partition, layers1000_p64_v1, Placement::Loop(64, 1))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Partition, layers1000_p16_v4, Placement::Loop(16, 4))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Partition, layers1000_p32_vshape, Placement::VShape(32))
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
