// libFuzzer target: the cluster TOML reader (pipette simulate/partition --cluster FILE.toml), then
// what those commands do next with the cluster: a parallel configuration checked against it and
// the roofline cost model's times for every layer of a small preset model on its GPU.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "pipette/cluster/cluster_toml.h"
#include "pipette/cluster/parallel_config.h"
#include "pipette/common/duration_limit.h"
#include "pipette/cost/roofline_cost_model.h"
#include "pipette/model/model_registry.h"

namespace {

const pipette::Workload kWorkload{.micro_batch_size = 1, .seq_len = 128};

const pipette::ModelGraph& Gpt2() {
  static const pipette::ModelGraph model = *pipette::MakeModel("gpt2-124m", kWorkload);
  return model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  pipette::Result<pipette::ClusterSpec> cluster = pipette::ParseClusterToml(text, "fuzz.toml");
  if (!cluster.ok()) return 0;
  (void)cluster->world_size();
  pipette::ParallelConfig config;
  config.pp = 2;
  config.tp = std::min(2, cluster->gpus_per_node);
  config.microbatches = 4;
  config.seq_len = kWorkload.seq_len;
  (void)pipette::ValidateParallelConfig(config, Gpt2(), *cluster);
  pipette::Result<pipette::RooflineCostModel> cost =
      pipette::RooflineCostModel::Make(*cluster, config);
  if (!cost.ok()) return 0;
  // A cluster the reader accepts gives every layer of a small model finite, bounded times (the
  // floors on rates keep them far below the limit; common/duration_limit.h).
  const auto bounded = [](double seconds) {
    return seconds >= 0 && seconds <= pipette::kMaxDurationSeconds;
  };
  for (std::size_t id = 0; id < Gpt2().num_layers(); ++id) {
    const pipette::LayerTimes t = cost->Times(Gpt2().layer(id));
    if (!bounded(t.f) || !bounded(t.i) || !bounded(t.w)) std::abort();
  }
  if (!bounded(cost->RingAllReduceSeconds(1e6, config.tp))) std::abort();
  return 0;
}
