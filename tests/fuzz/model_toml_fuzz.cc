// libFuzzer target: the model TOML reader (pipette simulate/partition --model FILE.toml), then
// what those commands do next with the model: its totals, the parallel configuration checked
// against it, and a balanced and a memory-aware partition over 2 ranks of a DGX H100.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "pipette/cluster/cluster_presets.h"
#include "pipette/cluster/parallel_config.h"
#include "pipette/cost/memory_model.h"
#include "pipette/cost/roofline_cost_model.h"
#include "pipette/model/model_toml.h"
#include "pipette/partition/partitioner.h"
#include "pipette/schedule/placement.h"

namespace {

// Partitions `model` over p = 2 ranks (v = 1) with `strategy`; errors are expected answers.
void PartitionTwoRanks(const pipette::ModelGraph& model, pipette::PartitionStrategy strategy) {
  const pipette::ClusterSpec& cluster = *pipette::FindClusterPreset("dgx-h100");
  pipette::ParallelConfig config;
  config.pp = 2;
  config.microbatches = 4;
  config.seq_len = 128;
  if (!pipette::ValidateParallelConfig(config, model, cluster).ok()) return;
  pipette::Result<pipette::RooflineCostModel> cost =
      pipette::RooflineCostModel::Make(cluster, config);
  if (!cost.ok()) return;
  pipette::MemoryModel memory(config);
  pipette::PartitionRequest request;
  request.strategy = strategy;
  request.memory = &memory;
  request.device_memory = static_cast<double>(cluster.gpu.memory_bytes);
  request.peak_chunks = {2, 1};
  request.peak_pending_w = {0, 0};
  pipette::Result<pipette::StagePlan> plan =
      pipette::Partition(model, pipette::Placement::Loop(2, 1), *cost, request);
  if (plan.ok()) (void)pipette::RankMemory(*plan, request);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const pipette::Workload workload{.micro_batch_size = 1, .seq_len = 128};
  pipette::Result<pipette::ModelGraph> model = pipette::ParseModelToml(text, "fuzz.toml", workload);
  if (!model.ok()) return 0;
  (void)model->TotalParams();
  (void)model->Regions();
  PartitionTwoRanks(*model, pipette::PartitionStrategy::kBalanced);
  PartitionTwoRanks(*model, pipette::PartitionStrategy::kMemory);
  return 0;
}
