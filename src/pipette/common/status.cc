#include "pipette/common/status.h"

namespace pipette {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kIoError:
      return "i/o error";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace pipette
