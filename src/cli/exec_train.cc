#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace pipette::cli {

int ExecTrain(int argc, char** argv) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::string binary =
      (error ? std::filesystem::path(argv[0]).parent_path() : self.parent_path()) / "pipette-train";
  std::vector<char*> args;
  std::string name = "pipette-train";
  args.push_back(name.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(binary.c_str(), args.data());
  fmt::print(stderr, "pipette train: cannot run {}: {} (it is built next to pipette)\n", binary,
             std::strerror(errno));
  return kExitFailure;
}

}  // namespace pipette::cli
