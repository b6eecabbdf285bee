// Partitioning real model graphs with the roofline cost model: the multimodal model's regions,
// heterogeneous first and last stages, and per-rank memory by hand.
#include <gtest/gtest.h>

#include "pipette/cluster/cluster_registry.h"
#include "pipette/cost/roofline_cost_model.h"
#include "pipette/model/model_registry.h"
#include "pipette/partition/partitioner.h"

namespace pipette {
namespace {

struct ModelSetup {
  ModelGraph model;
  ClusterSpec cluster;
  ParallelConfig config;
};

ModelSetup Make(const std::string& model, int pp) {
  ModelSetup s;
  s.config.pp = pp;
  Result<ModelGraph> graph = MakeModel(model, Workload{1, 2048, DType::kBF16});
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  s.model = std::move(graph).value();
  s.cluster = *MakeCluster("dgx-h100", 1);
  return s;
}

StagePlan MustPartition(const ModelSetup& s, const Placement& placement,
                        PartitionStrategy strategy = PartitionStrategy::kBalanced) {
  Result<RooflineCostModel> cost = RooflineCostModel::Make(s.cluster, s.config);
  EXPECT_TRUE(cost.ok()) << cost.status().message();
  PartitionRequest request;
  request.strategy = strategy;
  Result<StagePlan> plan = Partition(s.model, placement, *cost, request);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

TEST(ModelPartition, MultimodalTowersGetTheirOwnStagesVisionFirst) {
  const ModelSetup s = Make("vlm-small", 4);
  ASSERT_EQ(s.model.Regions(), (std::vector<std::string>{"vision", "text"}));
  for (auto strategy : {PartitionStrategy::kUniform, PartitionStrategy::kBalanced}) {
    const StagePlan plan = MustPartition(s, Placement::Loop(4, 1), strategy);
    int vision_stages = 0;
    bool text_started = false;
    for (const StageInfo& stage : plan.stages) {
      for (LayerId id : stage.layers) EXPECT_EQ(s.model.layer(id).region, stage.region);
      if (stage.region == "text") text_started = true;
      if (stage.region == "vision") {
        EXPECT_FALSE(text_started) << "a vision stage after a text stage";
        ++vision_stages;
      }
    }
    EXPECT_GE(vision_stages, 1);
    EXPECT_LE(vision_stages, 3);
    // The last vision stage hands the projected patches to the text tower.
    EXPECT_GT(plan.stages[vision_stages - 1].boundary_bytes, 0);
  }
}

TEST(ModelPartition, EmbeddingJoinsTheFirstStageHeadAndLossTheLast) {
  const ModelSetup s = Make("llama3-8b", 4);
  const StagePlan plan = MustPartition(s, Placement::Loop(4, 1));
  EXPECT_EQ(s.model.layer(plan.stages.front().layers.front()).name, "embedding");
  EXPECT_EQ(s.model.layer(plan.stages.back().layers.back()).name, "loss");
  EXPECT_EQ(plan.stages.back().boundary_bytes, 0);
  std::int64_t params = 0;
  for (const StageInfo& stage : plan.stages) params += stage.params;
  EXPECT_EQ(params, s.model.TotalParams());
  // The heavy ends make the first and last stages hold fewer blocks than the middle ones.
  EXPECT_LT(plan.stages.back().layers.size(), plan.stages[1].layers.size());
  EXPECT_LT(plan.balance(), 1.10);
}

TEST(ModelPartition, RankMemoryByHand) {
  // Two stages of hand-made layers; 1F1B at p = 2 keeps 2 chunks on rank 0 and 1 on rank 1.
  ModelGraph g;
  g.name = "hand";
  g.workload = Workload{1, 2048, DType::kBF16};
  for (int k = 0; k < 2; ++k) {
    Layer layer;
    layer.name = "l" + std::to_string(k);
    layer.fwd_flops = 1e12;
    layer.igrad_flops = 1e12;
    layer.wgrad_flops = 1e12;
    layer.params = 500'000'000;
    layer.activation_bytes = 3'000'000'000;
    layer.activation_bytes_recompute = 100'000'000;
    g.AddLayer(layer);
  }
  g.Connect(0, 1, 1000);
  ClusterSpec cluster = *MakeCluster("dgx-h100", 1);
  ParallelConfig config;
  config.pp = 2;
  config.dp = 2;
  config.zero_stage = 1;
  const RooflineCostModel cost = *RooflineCostModel::Make(cluster, config);
  const MemoryModel memory(config);
  PartitionRequest request;
  request.memory = &memory;
  request.device_memory = 80e9;
  request.peak_chunks = {2, 1};
  request.peak_pending_w = {0, 0};
  const StagePlan plan = *Partition(g, Placement::Loop(2, 1), cost, request);
  const std::vector<MemoryBreakdown> m = RankMemory(plan, request);
  // 5e8 params: weights 1 GB, gradients 1 GB, optimizer 6 GB / dp 2 = 3 GB.
  EXPECT_DOUBLE_EQ(m[0].weights, 1e9);
  EXPECT_DOUBLE_EQ(m[0].gradients, 1e9);
  EXPECT_DOUBLE_EQ(m[0].optimizer, 3e9);
  EXPECT_DOUBLE_EQ(m[0].activations, 2 * 3e9);
  EXPECT_DOUBLE_EQ(m[1].activations, 1 * 3e9);
  EXPECT_DOUBLE_EQ(m[0].total(), 11e9);
  request.recompute = true;
  const StagePlan recomputed = *Partition(g, Placement::Loop(2, 1), cost, request);
  EXPECT_DOUBLE_EQ(RankMemory(recomputed, request)[0].activations, 2 * 1e8);
}

}  // namespace
}  // namespace pipette
