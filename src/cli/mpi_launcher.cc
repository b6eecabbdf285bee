#include "cli/mpi_launcher.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cli/exit_code.h"
#include "pipette/common/printable.h"

namespace pipette::cli {

std::string SiblingBinary(std::string_view name) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return ((error ? std::filesystem::current_path(error) : self.parent_path()) / name).string();
}

std::string MpirunProgram() {
#ifdef PIPETTE_MPIEXEC
  if (std::string found = PIPETTE_MPIEXEC; !found.empty()) return found;
#endif
  return "mpirun";
}

std::vector<std::string> MpirunArguments(int np, int cores, bool as_root, const std::string& binary,
                                         const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(np)};
  if (np > cores) argv.emplace_back("--oversubscribe");
  if (as_root) argv.emplace_back("--allow-run-as-root");
  argv.push_back(binary);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

int ExecProgram(std::string_view command, const std::string& program,
                const std::vector<std::string>& argv) {
  std::vector<char*> pointers;
  for (const std::string& a : argv) pointers.push_back(const_cast<char*>(a.c_str()));
  pointers.push_back(nullptr);
  std::fflush(stdout);
  if (program.find('/') == std::string::npos) {
    execvp(program.c_str(), pointers.data());
  } else {
    execv(program.c_str(), pointers.data());
  }
  const int error = errno;
  fmt::print(stderr, "pipette {}: cannot run {}: {}\n", command, Printable(program),
             std::strerror(error));
  const std::string name = std::filesystem::path(program).filename().string();
  if (error == ENOENT && name.starts_with("pipette-")) {  // scripts/main.sh builds only the CLI
    fmt::print(stderr,
               "pipette {}: build it with `bash scripts/build.sh` (everything) or `cmake "
               "--build build --target {}`\n",
               command, Printable(name));
  }
  return kExitFailure;
}

}  // namespace pipette::cli
