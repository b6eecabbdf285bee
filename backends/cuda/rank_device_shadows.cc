#include <cstddef>
#include <memory>
#include <stdexcept>
#include <utility>

#include "bf16_shadow.h"
#include "check.h"
#include "kernels.h"
#include "rank_device.h"

namespace pipette::cuda {

const __nv_bfloat16* RankDevice::Bf16Shadow(const DeviceTensor& w) { return MakeShadow(w, true); }

__nv_bfloat16* RankDevice::MakeShadow(const DeviceTensor& w, bool recast, bool cast) {
  if (w.shadow_ != nullptr) return w.shadow_->data;
  if (w.empty()) return nullptr;
  auto shadow = std::make_unique<Bf16ShadowBuffer>();
  shadow->source = w.data();
  shadow->n = w.size();
  shadow->stream = w.stream_;
  shadow->meter = w.meter_;
  void* p = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&p, static_cast<std::size_t>(shadow->n) * 2, w.stream_));
  shadow->data = static_cast<__nv_bfloat16*>(p);
  if (shadow->meter != nullptr) shadow->meter->Add(shadow->n * 2);
  if (cast) kernels::CastToBf16(w.data(), shadow->n, shadow->data, stream_);
  if (recast) {
    shadow->owner = this;
    shadows_.push_back(shadow.get());
  }
  w.shadow_ = std::move(shadow);
  return w.shadow_->data;
}

GemmOperand RankDevice::WeightOperand(const DeviceTensor& w) {
  GemmOperand op;
  op.f32 = w.data();
  if (precision_ == GemmPrecision::kBf16) op.bf16 = Bf16Shadow(w);
  return op;
}

GemmOperand RankDevice::ActivationOperand(const DeviceTensor& x) {
  GemmOperand op;
  op.f32 = x.data();
  if (precision_ == GemmPrecision::kBf16) op.bf16 = MakeShadow(x, false);
  return op;
}

__nv_bfloat16* RankDevice::ShadowToWrite(const DeviceTensor& t) {
  if (precision_ != GemmPrecision::kBf16) return nullptr;
  if (t.bf16_shadow() != nullptr) throw std::logic_error("ShadowToWrite: the tensor has a shadow");
  return MakeShadow(t, false, /*cast=*/false);
}

void RankDevice::RefreshBf16Shadows() {
  for (Bf16ShadowBuffer* shadow : shadows_) {
    kernels::CastToBf16(shadow->source, shadow->n, shadow->data, stream_);
  }
}

}  // namespace pipette::cuda
