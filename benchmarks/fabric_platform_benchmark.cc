// Cost of building a cluster platform of N used nodes (every GPU used) on each fabric, and of one
// all-at-once traffic pattern on it (every GPU of the first half of the nodes sends 1 GB to the
// same GPU index half the cluster away), each fabric in its own process (SimGrid: one engine).
// Usage: fabric_platform_benchmark PRESET NODES   (prints one line)
//   for p in dgx-h100 dgx-h100-ft-1to1 dgx-h100-ft-2to1 dgx-h100-superpod; do
//     build/benchmarks/fabric_platform_benchmark $p 2048; done
#include <fmt/core.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <simgrid/s4u.hpp>

#include "pipette/cluster/cluster_registry.h"
#include "sim/cluster_platform.h"
#include "sim/sim_engine.h"

namespace sg4 = simgrid::s4u;

namespace {

double MaxRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024;
}

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: {} PRESET NODES\n", argv[0]);
    return 2;
  }
  const pipette::Result<pipette::ClusterSpec> cluster =
      pipette::MakeCluster(argv[1], std::atoi(argv[2]));
  if (!cluster.ok()) {
    fmt::print(stderr, "{}\n", cluster.status().message());
    return 2;
  }
  const std::unique_ptr<sg4::Engine> engine = pipette::MakeEngine();
  const double rss_before = MaxRssMiB();
  auto start = std::chrono::steady_clock::now();
  const pipette::ClusterPlatform platform = pipette::BuildClusterPlatform(*cluster, "");
  const double build = Since(start);
  const double rss_built = MaxRssMiB();
  const int half = cluster->world_size() / 2;
  for (int g = 0; g < half; ++g) {
    sg4::Host* from = platform.gpus[g];
    sg4::Host* to = platform.gpus[g + half];
    sg4::Actor::create("s", from, [from, to] { sg4::Comm::sendto(from, to, 1'000'000'000); });
  }
  start = std::chrono::steady_clock::now();
  engine->run();
  const double run = Since(start);
  fmt::print(
      "{:<18} nodes {:>5} gpus {:>6} routes {:>9} build {:>7.3f} s rss +{:>6.1f} MiB  "
      "half-to-half: {:>5} flows, simulated {:.4f} s in {:>6.3f} s, max rss {:>6.1f} MiB\n",
      cluster->name, cluster->nodes, cluster->world_size(),
      pipette::ClusterPlatformRoutes(*cluster, {}), build, rss_built - rss_before, half,
      sg4::Engine::get_clock(), run, MaxRssMiB());
  return 0;
}
