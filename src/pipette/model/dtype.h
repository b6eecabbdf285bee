// DType: the numeric formats pipette models and clusters talk about (weights, activations, GEMMs).
#pragma once

#include <string_view>

#include "pipette/common/status.h"

namespace pipette {

enum class DType { kFP32, kBF16, kFP16, kFP8 };

// Bytes per element: 4, 2, 2, 1.
constexpr int BytesOf(DType t) {
  switch (t) {
    case DType::kFP32:
      return 4;
    case DType::kBF16:
    case DType::kFP16:
      return 2;
    case DType::kFP8:
      return 1;
  }
  return 0;
}

// "fp32", "bf16", "fp16", "fp8".
std::string_view DTypeName(DType t);
// Parses the names above; the error names `key` and lists the accepted values.
Result<DType> ParseDType(std::string_view text, std::string_view key);

}  // namespace pipette
