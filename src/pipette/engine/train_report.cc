#include "pipette/engine/train_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include "pipette/common/byte_codec.h"

namespace pipette {

std::vector<char> PackContribution(const RankContribution& c) {
  ByteWriter out;
  out.Put(c.peak_bytes);
  out.Put(c.static_bytes);
  out.Put(c.peak_rss_bytes);
  out.Put(c.device_compute_seconds);
  out.Put(c.owned_elements);
  out.Put(c.compute_work_seconds);
  out.Put(c.slowdown_seconds);
  out.PutVector(c.stage_memory);
  out.PutVector(c.kernels);
  out.Put(c.kernel_profile_steps);
  out.PutVector(c.log.trace);
  out.PutVector(c.log.allreduces);
  out.PutVector(c.log.updates);
  return out.bytes();
}

RankContribution UnpackContribution(const std::vector<char>& bytes, int num_stages) {
  ByteReader in(bytes);
  RankContribution c;
  c.peak_bytes = in.Get<double>();
  c.static_bytes = in.Get<double>();
  c.peak_rss_bytes = in.Get<double>();
  c.device_compute_seconds = in.Get<double>();
  c.owned_elements = in.Get<std::int64_t>();
  c.compute_work_seconds = in.Get<double>();
  c.slowdown_seconds = in.Get<double>();
  in.AppendVector(c.stage_memory);
  c.stage_memory.resize(num_stages);
  in.AppendVector(c.kernels);
  c.kernel_profile_steps = in.Get<int>();
  in.AppendVector(c.log.trace);
  in.AppendVector(c.log.allreduces);
  in.AppendVector(c.log.updates);
  return c;
}

TrainReport AssembleReport(const TrainPlan& plan, const TrainOptions& options,
                           std::vector<double> losses, std::vector<double> step_times,
                           const std::vector<RankContribution>& ranks) {
  TrainReport report;
  const int p = plan.p();
  report.losses = std::move(losses);
  report.step_times = std::move(step_times);
  report.peak_memory_bytes.assign(p, 0);
  report.static_bytes.assign(p, 0);
  report.peak_rss_bytes.assign(p, 0);
  report.compute_work_seconds.assign(p, 0);
  report.slowdown_seconds.assign(p, 0);
  report.stage_memory.assign(plan.schedule.num_stages(), StageMemory{});
  for (std::size_t w = 0; w < ranks.size(); ++w) {
    const RankContribution& c = ranks[w];
    const int r = static_cast<int>(w) % p;
    report.peak_memory_bytes[r] = std::max(report.peak_memory_bytes[r], c.peak_bytes);
    report.static_bytes[r] = std::max(report.static_bytes[r], c.static_bytes);
    report.peak_rss_bytes[r] = std::max(report.peak_rss_bytes[r], c.peak_rss_bytes);
    if (c.device_compute_seconds >= 0) {
      report.device_compute_seconds.resize(p, 0);
      report.device_compute_seconds[r] =
          std::max(report.device_compute_seconds[r], c.device_compute_seconds);
    }
    report.params += c.owned_elements;
    if (w < static_cast<std::size_t>(p)) {  // replica 0, as the trace
      report.compute_work_seconds[r] = c.compute_work_seconds;
      report.slowdown_seconds[r] = c.slowdown_seconds;
      report.kernels.insert(report.kernels.end(), c.kernels.begin(), c.kernels.end());
      report.kernel_profile_steps = std::max(report.kernel_profile_steps, c.kernel_profile_steps);
    }
    for (std::size_t s = 0; s < c.stage_memory.size() && s < report.stage_memory.size(); ++s) {
      StageMemory& m = report.stage_memory[s];
      m.activation_bytes = std::max(m.activation_bytes, c.stage_memory[s].activation_bytes);
      m.wgrad_input_bytes = std::max(m.wgrad_input_bytes, c.stage_memory[s].wgrad_input_bytes);
      m.workspace_bytes = std::max(m.workspace_bytes, c.stage_memory[s].workspace_bytes);
    }
    report.trace.insert(report.trace.end(), c.log.trace.begin(), c.log.trace.end());
    report.allreduces.insert(report.allreduces.end(), c.log.allreduces.begin(),
                             c.log.allreduces.end());
    report.updates.insert(report.updates.end(), c.log.updates.begin(), c.log.updates.end());
  }
  report.kernels = MergeKernelSamples(report.kernels);
  double total_time = 0;
  for (const double t : report.step_times) total_time += t;
  report.tokens_per_s = static_cast<double>(plan.tokens_per_step()) * options.steps / total_time;
  return report;
}

MessageSizes MessageSizesOf(const TrainPlan& plan) {
  MessageSizes sizes;
  for (const int cols : plan.stage_output_cols) {
    sizes.stage_output_bytes.push_back(static_cast<std::int64_t>(plan.tokens_per_microbatch()) *
                                       cols * static_cast<std::int64_t>(sizeof(float)));
  }
  if (plan.variable_seqlens()) {  // a microbatch's messages scale with its tokens
    for (int mb = 0; mb < plan.m(); ++mb) {
      sizes.microbatch_scale.push_back(static_cast<double>(plan.seq_len_of(mb)) / plan.seq_len);
    }
  }
  return sizes;
}

double PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

std::optional<int> FirstNonFiniteLoss(const std::vector<double>& losses) {
  for (std::size_t k = 0; k < losses.size(); ++k) {
    if (!std::isfinite(losses[k])) return static_cast<int>(k);
  }
  return std::nullopt;
}

}  // namespace pipette
