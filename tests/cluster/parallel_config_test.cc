#include "pipette/cluster/parallel_config.h"

#include <gtest/gtest.h>

#include <string>

#include "pipette/cluster/cluster_registry.h"

namespace pipette {
namespace {

// A chain of `layers` layers built for one 2048-token bf16 sequence per microbatch.
ModelGraph Model(int layers, int heads, int kv_heads) {
  ModelGraph model;
  model.name = "test-decoder";
  model.workload = Workload{1, 2048, DType::kBF16};
  model.attributes = ModelAttributes{layers, 4096, heads, kv_heads, 32000};
  LayerId previous = 0;
  for (int i = 0; i < layers; ++i) {
    const LayerId id = model.AddLayer(Layer{.name = "block" + std::to_string(i), .type = "block"});
    if (i > 0) model.Connect(previous, id, 2048 * 4096 * 2);
    previous = id;
  }
  return model;
}

ClusterSpec Cluster(const char* name = "dgx-h100") { return *MakeCluster(name, 8); }  // 64 GPUs

// Valid against Model(8, 32, 8) on 8 nodes of 8 GPUs: 4*2*8 = 64 GPUs, 4*2 = 8 stages.
ParallelConfig Valid() {
  ParallelConfig config;
  config.pp = 4;
  config.dp = 2;
  config.tp = 8;
  config.v = 2;
  config.microbatches = 8;
  config.micro_batch_size = 1;
  config.seq_len = 2048;
  config.zero_stage = 1;
  config.dtype = DType::kBF16;
  return config;
}

// Returns the message of ValidateParallelConfig's rejection, expecting InvalidArgument.
std::string Rejection(const ParallelConfig& config, const ModelGraph& model = Model(8, 32, 8),
                      const ClusterSpec& cluster = Cluster()) {
  const Status status = ValidateParallelConfig(config, model, cluster);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  return status.message();
}

TEST(ValidateParallelConfig, AcceptsAConfigThatFillsTheClusterExactly) {
  const Status status = ValidateParallelConfig(Valid(), Model(8, 32, 8), Cluster());
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(ValidateParallelConfig, AcceptsFewerGpusAndModelsWithoutHeads) {
  ParallelConfig config = Valid();
  config.pp = 2;
  config.dp = 1;
  config.tp = 3;  // any tp divides "unknown" heads
  config.v = 1;
  config.recompute = true;
  config.zero_stage = 3;
  const Status status = ValidateParallelConfig(config, Model(2, 0, 0), Cluster());
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(ValidateParallelConfig, EveryCountIsAtLeastOne) {
  ParallelConfig config = Valid();
  config.pp = 0;
  EXPECT_EQ(Rejection(config), "--pp = 0: need at least 1 pipeline rank");
  config = Valid();
  config.dp = -1;
  EXPECT_EQ(Rejection(config), "--dp = -1: need at least 1 data-parallel replica");
  config = Valid();
  config.tp = 0;
  EXPECT_EQ(Rejection(config), "--tp = 0: need at least 1 tensor-parallel rank");
  config = Valid();
  config.v = 0;
  EXPECT_EQ(Rejection(config), "-v = 0: need at least 1 stage per pipeline rank");
  config = Valid();
  config.microbatches = 0;
  EXPECT_EQ(Rejection(config), "-m = 0: need at least 1 microbatch per step");
  config = Valid();
  config.micro_batch_size = 0;
  EXPECT_EQ(Rejection(config), "--micro-batch-size = 0: need at least 1 sequence per microbatch");
  config = Valid();
  config.seq_len = 0;
  EXPECT_EQ(Rejection(config), "--seq-len = 0: need at least 1 token per sequence");
}

TEST(ValidateParallelConfig, ZeroStageIsZeroToThree) {
  ParallelConfig config = Valid();
  config.zero_stage = 4;
  EXPECT_EQ(Rejection(config),
            "--zero = 4: the ZeRO stage is 0 (none), 1 (optimizer states), 2 (+ gradients) or 3 "
            "(+ weights)");
  config.zero_stage = -1;
  EXPECT_EQ(Rejection(config).substr(0, 14), "--zero = -1: t");
}

TEST(ValidateParallelConfig, DtypeNeedsAPeakOnTheGpu) {
  ParallelConfig config = Valid();
  config.dtype = DType::kFP8;
  ModelGraph model = Model(8, 32, 8);
  model.workload.dtype = DType::kFP8;
  EXPECT_EQ(Rejection(config, model, Cluster("dgx-a100")),
            "--dtype = fp8: cluster 'dgx-a100' has no peak FLOP/s for fp8 on its A100-SXM4-80GB "
            "(it lists bf16, fp16, fp32)");
  EXPECT_TRUE(ValidateParallelConfig(config, model, Cluster("dgx-h100")).ok());
}

TEST(ValidateParallelConfig, WorldSizeFitsTheCluster) {
  ParallelConfig config = Valid();
  config.dp = 4;
  EXPECT_EQ(Rejection(config),
            "--pp * --dp * --tp = 4*4*8 = 128 GPUs: more than the 64 GPUs of cluster 'dgx-h100' "
            "(8 x 8; --nodes sets the node count)");
  config.pp = 2'000'000'000;
  config.dp = 2'000'000'000;
  config.tp = 2'000'000'000;
  EXPECT_EQ(Rejection(config),
            "--pp * --dp * --tp = 2000000000*2000000000*2000000000 = more than 2^63 GPUs: more "
            "than the 64 GPUs of cluster 'dgx-h100' (8 x 8; --nodes sets the node count)");
}

TEST(ValidateParallelConfig, TensorParallelismStaysInsideANode) {
  ParallelConfig config = Valid();
  config.dp = 1;
  config.tp = 16;  // 4*1*16 = 64 GPUs, and 16 divides 32 heads and 16 kv-heads
  EXPECT_EQ(Rejection(config, Model(8, 32, 16)),
            "--tp = 16: more than the 8 GPUs per node of cluster 'dgx-h100' (tensor parallelism "
            "stays inside a node)");
}

TEST(ValidateParallelConfig, HeadsAreDivisibleByTp) {
  ParallelConfig config = Valid();
  config.tp = 3;
  EXPECT_EQ(Rejection(config, Model(8, 32, 0)),
            "--tp = 3: the model's 32 attention heads are not divisible by tp");
}

TEST(ValidateParallelConfig, KeyValueHeadsAreDivisibleByTp) {
  EXPECT_EQ(Rejection(Valid(), Model(8, 32, 2)),
            "--tp = 8: the model's 2 key-value heads are not divisible by tp");
}

TEST(ValidateParallelConfig, EveryStageGetsALayer) {
  ParallelConfig config = Valid();
  config.v = 3;
  EXPECT_EQ(Rejection(config),
            "--pp * -v = 4*3 = 12 stages: more than the model's 8 layers (every stage needs at "
            "least one)");
}

TEST(ValidateParallelConfig, ModelWasBuiltForThisWorkload) {
  ParallelConfig config = Valid();
  config.micro_batch_size = 2;
  EXPECT_EQ(Rejection(config),
            "--micro-batch-size = 2: the model graph 'test-decoder' was built for "
            "micro_batch_size = 1 (build it for this workload)");
  config = Valid();
  config.seq_len = 4096;
  EXPECT_EQ(Rejection(config),
            "--seq-len = 4096: the model graph 'test-decoder' was built for seq_len = 2048 (build "
            "it for this workload)");
  config = Valid();
  config.dtype = DType::kFP16;
  EXPECT_EQ(Rejection(config),
            "--dtype = fp16: the model graph 'test-decoder' was built for dtype = bf16 (build it "
            "for this workload)");
}

// Expert parallelism: ep divides dp (Megatron-LM carves the expert-parallel group out of the
// data-parallel one) and the model's routed experts; a dense model takes no ep.
TEST(ParallelConfig, ExpertParallelismDividesDpAndTheExperts) {
  ModelGraph moe = Model(8, 32, 8);
  moe.attributes.experts = 6;
  ParallelConfig config = Valid();
  config.ep = 2;
  EXPECT_TRUE(ValidateParallelConfig(config, moe, Cluster()).ok());
  config.ep = 0;
  EXPECT_EQ(Rejection(config, moe), "--ep = 0: need at least 1 expert-parallel GPU");
  config.ep = 4;
  EXPECT_EQ(Rejection(config, moe),
            "--ep = 4: must divide --dp = 2 (experts are sharded over ep GPUs of the "
            "data-parallel dimension)");
  config.dp = 4;
  config.tp = 4;
  EXPECT_EQ(Rejection(config, moe),
            "--ep = 4: the model's 6 routed experts are not divisible by ep (each GPU of the "
            "group holds experts/ep of them)");
  config.ep = 2;
  EXPECT_EQ(Rejection(config),
            "--ep = 2: model 'test-decoder' has no mixture-of-experts layers (expert parallelism "
            "needs an MoE model, e.g. deepseek-v3, mixtral-8x7b or moe-small)");
}

}  // namespace
}  // namespace pipette
