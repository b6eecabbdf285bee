// SimulationSize: what a simulation will cost before anything is built — the instructions its
// actors execute, the actors, the routes of its platform and the memory they take — and the
// limits above which pipette refuses a request up front, with the estimate, instead of running
// for hours or until the machine runs out of memory. The engine's time and memory grow in
// proportion to these counts (sim/README.md gives the measured rates); every accepted request
// therefore finishes in time proportional to its size. Plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "pipette/common/status.h"

namespace pipette {

// Instructions of one (stage, microbatch) at least: its forward and its backward (a split backward,
// and the sends and receives between ranks, add up to 5 more).
inline constexpr int kMinInstructionsPerChunk = 2;

// Stack of one simulated rank (SimGrid's contexts/stack-size, KiB): RunRank runs in 6 KiB and
// fails in 5 (measured with a guard page, sim/README.md); 256 leaves forty times that. Only the
// pages it touches are resident (MakeEngine has stacks mmap'd): about 8 KiB.
inline constexpr int kActorStackKiB = 256;

// The limits: about 90 s and 2 GB at the measured rates (9 us and 160 bytes per instruction,
// simulated and recorded; 20 KB per actor; 0.7 us and 120 bytes per route).
inline constexpr std::int64_t kMaxSimulatedInstructions = 10'000'000;
inline constexpr std::int64_t kMaxSimulatedActors = 65'536;
inline constexpr std::int64_t kMaxPlatformRoutes = 4'000'000;
inline constexpr double kMaxSimulationBytes = 8e9;

struct SimulationSize {
  std::int64_t instructions = 0;  // executed, over every actor and step
  std::int64_t actors = 0;        // one per rank of every replica
  std::int64_t routes = 0;        // of the cluster platform (cluster_platform.h); 0: ideal network
  double bytes = 0;               // memory estimate: stacks, instructions, traces, routes
  bool lower_bound = false;       // counted before the schedule exists: at least these
};

// The size of simulating `instructions` program instructions (every rank of one replica) run by
// `p` ranks in each of `replicas` replicas for `steps` steps on a platform of `routes` routes.
// Saturates instead of overflowing.
SimulationSize EstimateSimulationSize(std::int64_t instructions, std::int64_t p,
                                      std::int64_t replicas, std::int64_t steps,
                                      std::int64_t routes);

// The same before the schedule exists, as a lower bound (p*v*m chunks of kMinInstructionsPerChunk
// instructions): a request it refuses is certainly too large, and building its schedule would
// already cost time and memory in proportion. The lowered program is then checked exactly.
SimulationSize EstimateSimulationSize(std::int64_t p, std::int64_t v, std::int64_t m,
                                      std::int64_t replicas, std::int64_t steps,
                                      std::int64_t routes);

// OK within every limit, else InvalidArgument "<request>: the simulation would execute N
// instructions on A actors ... (about X GB); the limits are ..." naming the first count over its
// limit. `request` names the inputs ("--pp 16384 -m 976").
Status CheckSimulationSize(const SimulationSize& size, const std::string& request);

}  // namespace pipette
