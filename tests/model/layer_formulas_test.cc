#include "pipette/model/layer_formulas.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace pipette {
namespace {

// b = 2 sequences of s = 8 tokens in fp32 (4 bytes): 16 tokens.
const TokenBatch kTokens{2, 8, 4};

TEST(LayerFormulas, AttentionCountsEveryMatrixAndTheFullScoreSquare) {
  // h = 16, 4 heads of 4, 2 K/V heads: K and V are 16 × 8.
  const Layer layer = AttentionLayer("attn", AttentionShape{16, 4, 2, false}, kTokens);
  EXPECT_EQ(layer.type, "attention");
  EXPECT_EQ(layer.params, 16 + 16 * 16 + 16 * 8 + 16 * 8 + 16 * 16);  // RMSNorm, Q, K, V, O
  const double qkv = 2.0 * 16 * 16 * (16 + 8 + 8), out = 2.0 * 16 * 16 * 16;
  const double scores = 2.0 * 2 * 4 * 8 * 8 * 4;  // 2·b·a·s·s·d
  EXPECT_DOUBLE_EQ(layer.fwd_flops, qkv + out + 2 * scores);
  EXPECT_DOUBLE_EQ(layer.wgrad_flops, qkv + out);
  EXPECT_DOUBLE_EQ(layer.igrad_flops, qkv + out + 4 * scores);
  // 4 bytes × 16 tokens × (4·16 + 2·8) + 4 × b·a·s² softmax outputs (no dropout without biases).
  EXPECT_EQ(layer.activation_bytes, 4 * 16 * (4 * 16 + 2 * 8) + 4 * (2 * 4 * 8 * 8));
  EXPECT_EQ(layer.output_bytes, 4 * 16 * 16);
  EXPECT_EQ(layer.tp_allreduce_bytes, 4 * 16 * 16);

  const Layer biased = AttentionLayer("attn", AttentionShape{16, 4, 2, true}, kTokens);
  EXPECT_EQ(biased.params - layer.params, 16 /* LayerNorm bias */ + 16 + 8 + 8 + 16);
  // GPT-style: + 16·16 output dropout mask + 5 × b·a·s² (dropout output and mask per score).
  EXPECT_EQ(biased.activation_bytes, 4 * 16 * (4 * 16 + 2 * 8) + 16 * 16 + 9 * (2 * 4 * 8 * 8));
}

TEST(LayerFormulas, MlpHasTwoOrThreeMatrices) {
  const Layer gelu = MlpLayer("mlp", MlpShape{16, 64, false, true}, kTokens);
  EXPECT_EQ(gelu.params, 2 * 16 + 2 * 16 * 64 + 64 + 16);
  EXPECT_DOUBLE_EQ(gelu.fwd_flops, 2 * (2.0 * 16 * 16 * 64));
  EXPECT_EQ(gelu.activation_bytes, 4 * 16 * (2 * 16 + 2 * 64) + 16 * 16);
  EXPECT_EQ(gelu.wgrad_input_bytes, 4 * 16 * (16 + 64));
  const Layer swiglu = MlpLayer("mlp", MlpShape{16, 64, true, false}, kTokens);
  EXPECT_EQ(swiglu.params, 16 + 3 * 16 * 64);
  EXPECT_DOUBLE_EQ(swiglu.fwd_flops, 3 * (2.0 * 16 * 16 * 64));
  EXPECT_EQ(swiglu.activation_bytes, 4 * 16 * (2 * 16 + 3 * 64));  // no dropout mask
}

TEST(LayerFormulas, EmbeddingNormHeadAndLossAreMostlyMemory) {
  const Layer embedding = EmbeddingLayer("e", 100, 16, 32, kTokens);
  EXPECT_EQ(embedding.params, (100 + 32) * 16);
  EXPECT_DOUBLE_EQ(embedding.fwd_flops + embedding.igrad_flops + embedding.wgrad_flops, 0);
  EXPECT_EQ(embedding.activation_bytes, 4 * 16);  // the int32 token ids
  EXPECT_EQ(embedding.tp_allreduce_bytes, 4 * 16 * 16);

  const Layer norm = NormLayer("n", 16, true, kTokens);
  EXPECT_EQ(norm.params, 32);
  EXPECT_EQ(NormLayer("n", 16, false, kTokens).params, 16);
  EXPECT_FALSE(norm.tp_sharded);

  const Layer head = HeadLayer("h", 16, 100, false, kTokens);
  EXPECT_EQ(head.params, 1600);
  EXPECT_DOUBLE_EQ(head.fwd_flops, 2.0 * 16 * 100 * 16);
  EXPECT_EQ(head.output_bytes, 4 * 16 * 100);

  const Layer loss = LossLayer("l", 100, kTokens);
  EXPECT_EQ(loss.params, 0);
  EXPECT_DOUBLE_EQ(loss.fwd_flops, 0);
  EXPECT_EQ(loss.activation_bytes, 4 * 16 * 100 + 4 * 16);
  EXPECT_FALSE(loss.tp_sharded);
}

TEST(LayerFormulas, LinearAndProjector) {
  const Layer linear = LinearLayer("x", 16, 24, true, kTokens);
  EXPECT_EQ(linear.params, 16 * 24 + 24);
  EXPECT_DOUBLE_EQ(linear.fwd_flops, 2.0 * 16 * 16 * 24);
  EXPECT_DOUBLE_EQ(linear.igrad_flops, linear.fwd_flops);
  EXPECT_DOUBLE_EQ(linear.wgrad_flops, linear.fwd_flops);
  EXPECT_EQ(linear.output_bytes, 4 * 16 * 24);

  const Layer projector = ProjectorLayer("p", 16, 24, kTokens);
  EXPECT_EQ(projector.params, 16 * 24 + 24 + 24 * 24 + 24);
  EXPECT_DOUBLE_EQ(projector.fwd_flops, 2.0 * 16 * 16 * 24 + 2.0 * 16 * 24 * 24);
}

TEST(LayerFormulas, WorkloadLimitsNameTheKey) {
  EXPECT_TRUE(ValidateWorkload(Workload{8, 4096, DType::kBF16}).ok());
  EXPECT_EQ(ValidateWorkload(Workload{1, 0, DType::kBF16}).message(), "seq_len = 0: must be >= 1");
  EXPECT_EQ(ValidateWorkload(Workload{1, 1 << 21, DType::kBF16}).message(),
            "seq_len = 2097152: more than the limit of 1048576");
  EXPECT_EQ(CheckRange("model 'm'", "heads", 5000, 1, kMaxHeads).message(),
            "model 'm': heads = 5000: more than the limit of 4096");
}

TEST(LayerFormulas, EveryLayerCarriesTheShapeItWasBuiltWith) {
  const LayerShape attention = AttentionLayer("a", AttentionShape{16, 4, 2, true}, kTokens).shape;
  EXPECT_EQ(attention.hidden, 16);
  EXPECT_EQ(attention.heads, 4);
  EXPECT_EQ(attention.kv_heads, 2);
  EXPECT_TRUE(attention.bias);
  const LayerShape mlp = MlpLayer("m", MlpShape{16, 64, true, false}, kTokens).shape;
  EXPECT_EQ(mlp.hidden, 16);
  EXPECT_EQ(mlp.ffn_hidden, 64);
  EXPECT_TRUE(mlp.gated);
  EXPECT_FALSE(mlp.bias);
  const LayerShape embedding = EmbeddingLayer("e", 100, 16, 32, kTokens).shape;
  EXPECT_EQ(embedding.vocab, 100);
  EXPECT_EQ(embedding.hidden, 16);
  EXPECT_EQ(embedding.positions, 32);
  const LayerShape head = HeadLayer("h", 16, 100, true, kTokens).shape;
  EXPECT_EQ(head.hidden, 16);
  EXPECT_EQ(head.vocab, 100);
  EXPECT_TRUE(head.tied);
  EXPECT_TRUE(NormLayer("n", 16, true, kTokens).shape.bias);
  EXPECT_EQ(LossLayer("l", 100, kTokens).shape.vocab, 100);
  const LayerShape linear = LinearLayer("x", 8, 24, false, kTokens).shape;
  EXPECT_EQ(linear.in, 8);
  EXPECT_EQ(linear.out, 24);
  EXPECT_EQ(linear.hidden, 0);
}

}  // namespace
}  // namespace pipette
