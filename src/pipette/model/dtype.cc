#include "pipette/model/dtype.h"

#include <fmt/core.h>

namespace pipette {

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kFP32:
      return "fp32";
    case DType::kBF16:
      return "bf16";
    case DType::kFP16:
      return "fp16";
    case DType::kFP8:
      return "fp8";
  }
  return "?";
}

Result<DType> ParseDType(std::string_view text, std::string_view key) {
  for (DType t : {DType::kFP32, DType::kBF16, DType::kFP16, DType::kFP8}) {
    if (text == DTypeName(t)) return t;
  }
  return Status::InvalidArgument(
      fmt::format("{} = '{}': unknown dtype (expected fp32, bf16, fp16 or fp8)", key, text));
}

}  // namespace pipette
