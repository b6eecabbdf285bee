// `pipette train` under mpirun (label mpi) trains the model layer's tiny presets: the parameters
// the CPU engine allocates (summed over its ranks, shared copies once) are the ones the model
// layer counts, so `pipette simulate --model tiny` costs the model `pipette train` runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../cli/pipette_runner.h"
#include "pipette/model/model_registry.h"

namespace pipette {
namespace {

using testing::CommandResult;
using testing::Shell;

nlohmann::json TrainJson(const std::string& args) {
  const CommandResult run =
      Shell(std::string(PIPETTE_MPIEXEC) + " --oversubscribe" +
            (geteuid() == 0 ? " --allow-run-as-root" : "") + " -np 2 " + PIPETTE_BINARY +
            " train -p 2 -m 2 --steps 1 --format json --no-db " + args);
  EXPECT_EQ(run.exit_code, 0) << run.err << run.out;
  const std::size_t start = run.out.rfind("\n{");
  return nlohmann::json::parse(run.out.substr(start == std::string::npos ? 0 : start + 1));
}

TEST(TinyPreset, TrainReportsTheModelLayersParameterCount) {
  for (const std::string model : {"tiny", "tiny-tied", "tiny-llama", "tiny-llama-tied"}) {
    Result<ModelGraph> graph = MakeModel(model, Workload{4, 32, DType::kFP32});
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    const nlohmann::json json = TrainJson("--model " + model);
    EXPECT_EQ(json["model"], model);
    EXPECT_EQ(json["params"].get<std::int64_t>(), graph->TotalParams()) << model;
  }
  // The hand count of tests/model/model_presets_test.cc.
  EXPECT_EQ(MakeModel("tiny", Workload{1, 1, DType::kFP32})->TotalParams(), 210'304);
  EXPECT_EQ(MakeModel("tiny-llama", Workload{1, 1, DType::kFP32})->TotalParams(), 156'224);
}

}  // namespace
}  // namespace pipette
