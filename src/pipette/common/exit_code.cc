#include "pipette/common/exit_code.h"

namespace pipette {

int ExitCodeOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
      return kExitBadInput;
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace pipette
