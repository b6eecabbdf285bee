#include "pipette/engine/flops.h"

namespace pipette {
namespace {

double HeadDim(const DecoderSpec& spec) { return static_cast<double>(spec.hidden) / spec.heads; }

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

double AttentionCoreForwardFlopsPerToken(const DecoderSpec& spec, int seq) {
  const double qk_width = spec.heads * HeadDim(spec);  // = h
  return 4.0 * seq * qk_width;
}

double BlockForwardFlopsPerToken(const DecoderSpec& spec, int seq) {
  const double h = spec.hidden;
  const double kv = spec.kv_heads * HeadDim(spec);
  const double qkv = 2 * h * (h + 2 * kv);
  const double out = 2 * h * h;
  const double mlp = (spec.gated_mlp ? 6.0 : 4.0) * h * spec.ffn_hidden;
  return qkv + out + AttentionCoreForwardFlopsPerToken(spec, seq) + mlp;
}

double HeadForwardFlopsPerToken(const DecoderSpec& spec) {
  return 2.0 * spec.hidden * static_cast<double>(spec.vocab);
}

PassFlops StageFlops(const DecoderSpec& spec, int seq, double tokens, int blocks, bool with_head) {
  PassFlops flops;
  flops.forward = tokens * blocks * BlockForwardFlopsPerToken(spec, seq);
  if (with_head) flops.forward += tokens * HeadForwardFlopsPerToken(spec);
  flops.backward = 2 * flops.forward;
  return flops;
}

double ModelStepFlops(const DecoderSpec& spec, int seq, double tokens) {
  return StageFlops(spec, seq, tokens, spec.layers, true).total();
}

std::optional<DevicePeak> DenseBf16Peak(std::string_view device_name) {
  // NVIDIA's datasheets give bf16 tensor-core rates "with sparsity"; the dense rate is half.
  static const std::string kH100 =
      "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100): BF16 1,979 "
      "TFLOPS (SXM) / 1,513 TFLOPS (PCIe) with sparsity, dense = half";
  static const std::string kH200 =
      "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200): BF16 1,979 "
      "TFLOPS (SXM) with sparsity, dense = half";
  // NVL boards (H100 NVL, H200 NVL) and Grace Hopper (GH200) have other clocks and rates: not in
  // the table.
  if (Contains(device_name, "NVL") || Contains(device_name, "GH200")) return std::nullopt;
  if (Contains(device_name, "H200")) return DevicePeak{"H200 SXM", 989.4, kH200};
  if (!Contains(device_name, "H100")) return std::nullopt;
  if (Contains(device_name, "PCIe")) return DevicePeak{"H100 PCIe", 756.0, kH100};
  if (Contains(device_name, "HBM3") || Contains(device_name, "SXM")) {
    return DevicePeak{"H100 SXM5", 989.4, kH100};
  }
  return std::nullopt;
}

double Mfu(double flops, double seconds, double peak_tflops) {
  if (seconds <= 0 || peak_tflops <= 0) return 0;
  return flops / seconds / (peak_tflops * 1e12);
}

}  // namespace pipette
