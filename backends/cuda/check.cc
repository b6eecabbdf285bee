#include "check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <stdexcept>

namespace pipette::cuda {

void ThrowCudaError(const char* library, const char* expression, const char* file, int line,
                    const std::string& error) {
  char host[256] = "?";
  (void)gethostname(host, sizeof host - 1);
  throw std::runtime_error(fmt::format("{} error on {} at {}:{}: {} failed: {}", library, host,
                                       file, line, expression, error));
}

}  // namespace pipette::cuda
