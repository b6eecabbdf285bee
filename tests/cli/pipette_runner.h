// Test helper: runs the pipette binary (PIPETTE_BINARY) through the shell in a scratch working
// directory of the test process (ctest runs each test in its own process, in parallel), where the
// runs it records land, and captures its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace pipette::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether `text` holds `part` (a command's output or error holds a message).
inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// This test process's scratch directory, empty when the process first uses it: pids are reused, so
// a directory of the same name is an earlier process's, and is removed first (else a test that
// checks a command wrote no file, e.g. no pipette.db, fails whenever its pid once ran a test that
// did write one).
inline std::string ScratchDir() {
  static const std::string dir = [] {
    const std::string fresh = ::testing::TempDir() + "pipette_cli_" + std::to_string(getpid());
    std::filesystem::remove_all(fresh);
    return fresh;
  }();
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs the shell command `command_line` in ScratchDir().
inline CommandResult Shell(const std::string& command_line) {
  const std::string dir = ScratchDir();
  const std::string err_path = dir + "/stderr.txt";
  const std::string command = "cd " + dir + " && " + command_line + " 2>" + err_path;
  CommandResult run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = ReadFile(err_path);
  return run;
}

// Runs `pipette <args>` (args pass through the shell; keep them simple) in ScratchDir().
inline CommandResult Pipette(const std::string& args) {
  return Shell(std::string(PIPETTE_BINARY) + " " + args);
}

}  // namespace pipette::testing
