#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_launcher.h"

namespace pipette::cli {

int ExecSibling(int argc, char** argv) {
  const std::string command = argv[1];
  const std::string name = "pipette-" + command;
  std::vector<std::string> args = {name};
  for (int i = 2; i < argc; ++i) args.emplace_back(argv[i]);
  return ExecProgram(command, SiblingBinary(name), args);
}

}  // namespace pipette::cli
