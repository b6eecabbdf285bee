#include "sim/simulation_size.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipette {
namespace {

constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max() / 4;

// a * b, or kSaturated when it would exceed it.
std::int64_t Times(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product) || product > kSaturated) return kSaturated;
  return product;
}

// Bytes per item, measured (sim/README.md) and rounded up: an executed instruction (its program
// entry, trace event and row, its share of the communications), an actor beyond its stack, a
// route.
constexpr double kBytesPerInstruction = 200;
constexpr double kBytesPerActor = 24 * 1024;  // its touched stack pages included
constexpr double kBytesPerRoute = 150;
constexpr double kBytesBase = 35e6;  // the process before any case: a 1-GPU simulation's peak

}  // namespace

std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum) || sum > kSaturated) return kSaturated;
  return sum;
}

SimulationSize EstimateSimulationSize(std::int64_t instructions, std::int64_t p,
                                      std::int64_t replicas, std::int64_t steps,
                                      std::int64_t routes, std::int64_t messages,
                                      std::int64_t timed_replicas,
                                      std::int64_t message_equivalents) {
  SimulationSize size;
  const std::int64_t running = timed_replicas < 0 ? replicas : timed_replicas;
  size.instructions = Times(Times(instructions, running), steps);
  size.actors = Times(p, running);
  size.routes = routes;
  size.bytes = kBytesBase + static_cast<double>(size.instructions) * kBytesPerInstruction +
               static_cast<double>(size.actors) * kBytesPerActor +
               static_cast<double>(routes) * kBytesPerRoute;
  const double timed = static_cast<double>(running);
  const double actors = static_cast<double>(p) * timed;
  const double program =
      static_cast<double>(std::max<std::int64_t>(instructions - messages, 0)) * timed;
  const double between =
      static_cast<double>(message_equivalents < 0 ? messages : message_equivalents) * timed;
  const double per_step =
      kSecondsPerInstruction * program +
      (kSecondsPerInstructionPerRootActor * program + kSecondsPerMessagePerRootActor * between) *
          std::sqrt(actors);
  size.seconds = per_step * static_cast<double>(steps) + kSecondsPerActor * actors +
                 kSecondsPerRoute * static_cast<double>(routes);
  return size;
}

SimulationSize LowerBoundSimulationSize(std::int64_t p, std::int64_t v, std::int64_t m,
                                        std::int64_t replicas, std::int64_t steps,
                                        std::int64_t routes, std::int64_t running_replicas) {
  const std::int64_t chunks = Times(Times(p, v), m);
  SimulationSize size = EstimateSimulationSize(
      Times(chunks, kMinInstructionsPerChunk), p, replicas, steps, routes,
      /*messages=*/0, std::clamp<std::int64_t>(running_replicas, 1, replicas));
  size.lower_bound = true;
  return size;
}

Status CheckSimulationSize(const SimulationSize& size, const std::string& request) {
  std::string over;
  if (size.instructions > kMaxSimulatedInstructions) {
    over = fmt::format("{} instructions > {}", size.instructions, kMaxSimulatedInstructions);
  } else if (size.actors > kMaxSimulatedActors) {
    over = fmt::format("{} actors > {}", size.actors, kMaxSimulatedActors);
  } else if (size.routes > kMaxPlatformRoutes) {
    over = fmt::format("{} platform routes > {}", size.routes, kMaxPlatformRoutes);
  } else if (size.bytes > kMaxSimulationBytes) {
    over = fmt::format("{:.1f} GB > {:g} GB", size.bytes / 1e9, kMaxSimulationBytes / 1e9);
  } else if (size.seconds > kMaxSimulationSeconds) {
    over = fmt::format("{:.0f} s > {:g} s", size.seconds, kMaxSimulationSeconds);
  } else {
    return Status::Ok();
  }
  return Status::InvalidArgument(fmt::format(
      "{}: the simulation would execute {}{} instructions on {} actors over {} platform routes "
      "(about {:.1f} GB of memory and {:.0f} s), more than pipette simulates ({}); the limits are "
      "{} instructions, {} actors, {} routes, {:g} GB and {:g} s: use fewer ranks, microbatches, "
      "replicas or steps",
      request, size.lower_bound ? "at least " : "", size.instructions, size.actors, size.routes,
      size.bytes / 1e9, size.seconds, over, kMaxSimulatedInstructions, kMaxSimulatedActors,
      kMaxPlatformRoutes, kMaxSimulationBytes / 1e9, kMaxSimulationSeconds));
}

}  // namespace pipette
