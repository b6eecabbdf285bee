#include "pipette/engine/flops.h"

#include <gtest/gtest.h>

#include "pipette/model/model_presets.h"

namespace pipette {
namespace {

const DecoderSpec& Preset(const char* name) {
  const DecoderSpec* spec = FindDecoderPreset(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

TEST(FlopsTest, GptBlockIs24HSquaredPlus4SH) {
  // h = s = 2048: 24 h^2 + 4 s h = 28 * 2048^2, computed by hand.
  EXPECT_DOUBLE_EQ(BlockForwardFlopsPerToken(Preset("gpt3-1.3b"), 2048), 117'440'512.0);
  EXPECT_DOUBLE_EQ(AttentionCoreForwardFlopsPerToken(Preset("gpt3-1.3b"), 2048), 16'777'216.0);
  // s = 1024 changes only the attention core: 24 h^2 + 4 * 1024 * h.
  EXPECT_DOUBLE_EQ(BlockForwardFlopsPerToken(Preset("gpt3-1.3b"), 1024), 109'051'904.0);
  EXPECT_DOUBLE_EQ(HeadForwardFlopsPerToken(Preset("gpt3-1.3b")), 2.0 * 2048 * 50257);
}

TEST(FlopsTest, LlamaBlockCountsGroupedKvAndThreeMlpMatrices) {
  // h 2048, 32 heads of 64, 8 kv heads (h_kv 512), SwiGLU f 8192, s 2048:
  // Q,K,V 2*2048*(2048+1024) = 12,582,912; out 8,388,608; core 16,777,216; MLP 6*2048*8192 =
  // 100,663,296; sum 138,412,032.
  EXPECT_DOUBLE_EQ(BlockForwardFlopsPerToken(Preset("llama3.2-1b"), 2048), 138'412'032.0);
}

TEST(FlopsTest, WholeGptStepMatchesMegatronsFormula) {
  const DecoderSpec& gpt = Preset("gpt3-1.3b");
  // Megatron (Narayanan et al. 2021): 72 B s l h^2 (1 + s/(6h) + V/(12 h l)), B = 1, s = 2048,
  // l = 24, h = 2048, V = 50257: 18,582,066,954,240 (by hand).
  EXPECT_DOUBLE_EQ(ModelStepFlops(gpt, 2048, 2048), 18'582'066'954'240.0);
  const double b = 4, s = 2048, l = 24, h = 2048, v = 50257;
  const double megatron = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * h * l));
  EXPECT_NEAR(ModelStepFlops(gpt, 2048, b * s) / megatron, 1.0, 1e-12);
}

TEST(FlopsTest, StageIsForwardPlusTwiceForward) {
  const DecoderSpec& gpt = Preset("gpt3-1.3b");
  const PassFlops one = StageFlops(gpt, 2048, 8192, 1, false);
  EXPECT_DOUBLE_EQ(one.forward, 8192.0 * 117'440'512.0);
  EXPECT_DOUBLE_EQ(one.backward, 2 * one.forward);
  EXPECT_DOUBLE_EQ(one.total(), 3 * one.forward);
  const PassFlops two = StageFlops(gpt, 2048, 8192, 2, true);
  EXPECT_DOUBLE_EQ(two.forward, 2 * one.forward + 8192.0 * 2 * 2048 * 50257);
}

TEST(FlopsTest, PeaksOfKnownDevicesOnly) {
  ASSERT_TRUE(DenseBf16Peak("NVIDIA H100 80GB HBM3").has_value());
  EXPECT_DOUBLE_EQ(DenseBf16Peak("NVIDIA H100 80GB HBM3")->bf16_tflops, 989.4);
  EXPECT_DOUBLE_EQ(DenseBf16Peak("NVIDIA H100 PCIe")->bf16_tflops, 756.0);
  EXPECT_DOUBLE_EQ(DenseBf16Peak("NVIDIA H200")->bf16_tflops, 989.4);
  EXPECT_FALSE(DenseBf16Peak("NVIDIA H100 NVL").has_value());
  EXPECT_FALSE(DenseBf16Peak("NVIDIA H200 NVL").has_value());
  EXPECT_FALSE(DenseBf16Peak("NVIDIA GH200 480GB").has_value());
  // The CUDA engine's DeviceDescription() holds the name among other words.
  EXPECT_EQ(DenseBf16Peak("1 x NVIDIA H100 80GB HBM3, 80 GiB, sm_90, driver CUDA 13.0")->device,
            "H100 SXM5");
  EXPECT_FALSE(DenseBf16Peak("NVIDIA A100-SXM4-80GB").has_value());
  EXPECT_FALSE(DenseBf16Peak("").has_value());
  EXPECT_NE(DenseBf16Peak("NVIDIA H200")->source.find("datasheet"), std::string::npos);
}

TEST(FlopsTest, MfuIsRateOverPeak) {
  // 494.7 TFLOP in one second on a 989.4 TFLOP/s device: 50 %.
  EXPECT_DOUBLE_EQ(Mfu(494.7e12, 1.0, 989.4), 0.5);
  EXPECT_DOUBLE_EQ(Mfu(494.7e12, 2.0, 989.4), 0.25);
  EXPECT_EQ(Mfu(1e12, 0, 989.4), 0);
  EXPECT_EQ(Mfu(1e12, 1, 0), 0);
}

}  // namespace
}  // namespace pipette
