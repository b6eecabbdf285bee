// benchmarks/results_file.h: a benchmark's JSON rewritten after every part, a part that throws
// recorded by name while the later parts still run (what cuda_engine_benchmark and
// cuda_gemm_benchmark do on a GPU; here without one).
#include "results_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace pipette {
namespace {

nlohmann::json Read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + "-" + std::to_string(getpid()) + ".json"))
      .string();
}

TEST(ResultsFile, EveryPartIsOnDiskBeforeTheNextRuns) {
  const std::string path = TempPath("results-file");
  ResultsFile results(path);
  EXPECT_EQ(Read(path), nlohmann::json::object());  // there from the start
  results.json()["device"] = "test";
  EXPECT_TRUE(results.Run("stage a", [&] { results.json()["stages"].push_back({{"f_ms", 1.5}}); }));
  // What a later part sees on disk (a kill now would leave exactly this).
  nlohmann::json seen;
  EXPECT_TRUE(results.Run("stage b", [&] { seen = Read(path); }));
  EXPECT_EQ(seen["device"], "test");
  EXPECT_EQ(seen["stages"][0]["f_ms"], 1.5);
  EXPECT_FALSE(results.failed());
  std::filesystem::remove(path);
}

TEST(ResultsFile, APartThatThrowsIsNamedAndTheNextStillRuns) {
  const std::string path = TempPath("results-file-throw");
  ResultsFile results(path);
  EXPECT_TRUE(results.Run("stage gpt3-1.3b", [&] { results.json()["stages"].push_back(1); }));
  EXPECT_FALSE(results.Run("stage llama3.2-1b", [&] {
    results.json()["stages"].push_back(2);  // half a part: kept, the error says what failed
    throw std::runtime_error("CUDA error on host (pid 1) at model.cc:10: an illegal address");
  }));
  EXPECT_FALSE(results.Run("bubbles", [] { throw 7; }));
  bool ran = false;
  EXPECT_TRUE(results.Run("after", [&] { ran = true; }));
  EXPECT_TRUE(ran);
  EXPECT_TRUE(results.failed());
  const nlohmann::json on_disk = Read(path);
  EXPECT_EQ(on_disk["stages"], nlohmann::json::array({1, 2}));
  ASSERT_EQ(on_disk["errors"].size(), 2u);
  EXPECT_EQ(on_disk["errors"][0]["part"], "stage llama3.2-1b");
  EXPECT_EQ(on_disk["errors"][0]["error"],
            "CUDA error on host (pid 1) at model.cc:10: an illegal address");
  EXPECT_EQ(on_disk["errors"][1]["part"], "bubbles");
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  std::filesystem::remove(path);
}

TEST(ResultsFile, AnUnwritablePathIsSaidNotThrown) {
  ResultsFile results("/nonexistent-dir/results.json");
  EXPECT_FALSE(results.Write());
  EXPECT_TRUE(results.Run("part", [] {}));
}

}  // namespace
}  // namespace pipette
