#include "pipette/cluster/parallel_config.h"

#include <fmt/core.h>

#include <cstdint>
#include <string>

namespace pipette {
namespace {

// Returns InvalidArgument "`key` = `value`: need at least 1 `what`" when value < 1.
Status CheckAtLeastOne(const char* key, int value, const char* what) {
  if (value >= 1) return Status::Ok();
  return Status::InvalidArgument(fmt::format("{} = {}: need at least 1 {}", key, value, what));
}

// "bf16, fp16, fp32": the dtypes `gpu` lists a peak for.
std::string ListedDTypes(const GpuSpec& gpu) {
  std::string names;
  for (DType t : {DType::kBF16, DType::kFP16, DType::kFP8, DType::kFP32}) {
    if (!gpu.peak_flops.contains(t)) continue;
    if (!names.empty()) names += ", ";
    names += DTypeName(t);
  }
  return names.empty() ? "none" : names;
}

Status CheckCounts(const ParallelConfig& config) {
  PIPETTE_RETURN_IF_ERROR(CheckAtLeastOne("--pp", config.pp, "pipeline rank"));
  PIPETTE_RETURN_IF_ERROR(CheckAtLeastOne("--dp", config.dp, "data-parallel replica"));
  PIPETTE_RETURN_IF_ERROR(CheckAtLeastOne("--tp", config.tp, "tensor-parallel rank"));
  PIPETTE_RETURN_IF_ERROR(CheckAtLeastOne("--ep", config.ep, "expert-parallel GPU"));
  if (config.dp % config.ep != 0) {
    return Status::InvalidArgument(
        fmt::format("--ep = {}: must divide --dp = {} (experts are sharded over ep GPUs of the "
                    "data-parallel dimension)",
                    config.ep, config.dp));
  }
  PIPETTE_RETURN_IF_ERROR(CheckAtLeastOne("-v", config.v, "stage per pipeline rank"));
  PIPETTE_RETURN_IF_ERROR(CheckAtLeastOne("-m", config.microbatches, "microbatch per step"));
  PIPETTE_RETURN_IF_ERROR(
      CheckAtLeastOne("--micro-batch-size", config.micro_batch_size, "sequence per microbatch"));
  PIPETTE_RETURN_IF_ERROR(CheckAtLeastOne("--seq-len", config.seq_len, "token per sequence"));
  if (config.zero_stage < 0 || config.zero_stage > 3) {
    return Status::InvalidArgument(
        fmt::format("--zero = {}: the ZeRO stage is 0 (none), 1 (optimizer states), 2 (+ "
                    "gradients) or 3 (+ weights)",
                    config.zero_stage));
  }
  return Status::Ok();
}

Status CheckAgainstCluster(const ParallelConfig& config, const ClusterSpec& cluster) {
  const auto peak = cluster.gpu.peak_flops.find(config.dtype);
  if (peak == cluster.gpu.peak_flops.end() || !(peak->second > 0)) {
    return Status::InvalidArgument(
        fmt::format("--dtype = {}: cluster '{}' has no peak FLOP/s for {} on its {} (it lists {})",
                    DTypeName(config.dtype), cluster.name, DTypeName(config.dtype),
                    cluster.gpu.name, ListedDTypes(cluster.gpu)));
  }
  const std::int64_t gpus = std::int64_t{cluster.nodes} * cluster.gpus_per_node;
  std::int64_t world = 0;  // pp*dp fits in 64 bits (both < 2^31); the product with tp may not
  const bool overflow =
      __builtin_mul_overflow(std::int64_t{config.pp} * config.dp, config.tp, &world);
  if (overflow || world > gpus) {
    const std::string product = overflow ? "more than 2^63" : fmt::format("{}", world);
    return Status::InvalidArgument(
        fmt::format("--pp * --dp * --tp = {}*{}*{} = {} GPUs: more than the {} GPUs of cluster "
                    "'{}' ({} x {}; --nodes sets the node count)",
                    config.pp, config.dp, config.tp, product, gpus, cluster.name, cluster.nodes,
                    cluster.gpus_per_node));
  }
  if (config.tp > cluster.gpus_per_node) {
    return Status::InvalidArgument(
        fmt::format("--tp = {}: more than the {} GPUs per node of cluster '{}' (tensor "
                    "parallelism stays inside a node)",
                    config.tp, cluster.gpus_per_node, cluster.name));
  }
  return Status::Ok();
}

Status CheckAgainstModel(const ParallelConfig& config, const ModelGraph& model) {
  const ModelAttributes& attributes = model.attributes;
  if (attributes.heads > 0 && attributes.heads % config.tp != 0) {
    return Status::InvalidArgument(
        fmt::format("--tp = {}: the model's {} attention heads are not divisible by tp", config.tp,
                    attributes.heads));
  }
  if (attributes.kv_heads > 0 && attributes.kv_heads % config.tp != 0) {
    return Status::InvalidArgument(
        fmt::format("--tp = {}: the model's {} key-value heads are not divisible by tp", config.tp,
                    attributes.kv_heads));
  }
  if (config.ep > 1 && attributes.experts == 0) {
    return Status::InvalidArgument(fmt::format(
        "--ep = {}: model '{}' has no mixture-of-experts layers (expert parallelism needs an MoE "
        "model, e.g. deepseek-v3, mixtral-8x7b or moe-small)",
        config.ep, model.name));
  }
  if (config.ep > 1 && attributes.experts % config.ep != 0) {
    return Status::InvalidArgument(
        fmt::format("--ep = {}: the model's {} routed experts are not divisible by ep (each GPU "
                    "of the group holds experts/ep of them)",
                    config.ep, attributes.experts));
  }
  const std::int64_t stages = std::int64_t{config.pp} * config.v;
  const std::int64_t layers = static_cast<std::int64_t>(model.num_layers());
  if (stages > layers) {
    return Status::InvalidArgument(
        fmt::format("--pp * -v = {}*{} = {} stages: more than the model's {} layers (every stage "
                    "needs at least one)",
                    config.pp, config.v, stages, layers));
  }
  const Workload& built = model.workload;
  if (config.micro_batch_size != built.micro_batch_size) {
    return Status::InvalidArgument(
        fmt::format("--micro-batch-size = {}: the model graph '{}' was built for "
                    "micro_batch_size = {} (build it for this workload)",
                    config.micro_batch_size, model.name, built.micro_batch_size));
  }
  if (config.seq_len != built.seq_len) {
    return Status::InvalidArgument(
        fmt::format("--seq-len = {}: the model graph '{}' was built for seq_len = {} (build it "
                    "for this workload)",
                    config.seq_len, model.name, built.seq_len));
  }
  if (config.dtype != built.dtype) {
    return Status::InvalidArgument(
        fmt::format("--dtype = {}: the model graph '{}' was built for dtype = {} (build it for "
                    "this workload)",
                    DTypeName(config.dtype), model.name, DTypeName(built.dtype)));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateParallelConfig(const ParallelConfig& config, const ModelGraph& model,
                              const ClusterSpec& cluster) {
  PIPETTE_RETURN_IF_ERROR(CheckCounts(config));
  PIPETTE_RETURN_IF_ERROR(CheckAgainstCluster(config, cluster));
  return CheckAgainstModel(config, model);
}

}  // namespace pipette
