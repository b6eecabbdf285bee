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

// The limits: 120 s of estimated time (below), 8 GB at the measured rates (a 35 MB process; 200
// bytes per instruction, simulated and recorded; 24 KB per actor; 150 bytes per route or its
// worth, cluster_platform.h), and the counts. The routes' limit (2.4 GB of them) admits 360,000
// GPUs on the single switch.
inline constexpr std::int64_t kMaxSimulatedInstructions = 10'000'000;
inline constexpr std::int64_t kMaxSimulatedActors = 65'536;
inline constexpr std::int64_t kMaxPlatformRoutes = 16'000'000;
inline constexpr double kMaxSimulationBytes = 8e9;
inline constexpr double kMaxSimulationSeconds = 120;

// The time model (sim/README.md, "What a simulation costs"), fitted to eleven measured runs of
// 1,024 to 65,536 actors, on clusters and the ideal network, within 20% (the slowest, 252 s, is
// estimated 203 s): SimGrid's solver shares the network among every active flow, so an
// instruction costs more the more actors run beside it, a message between replicas (the gradient
// reduction's, the all-to-all's) about three times a program instruction; and each actor costs
// its creation and its platform routes.
inline constexpr double kSecondsPerInstruction = 5.85e-7;
inline constexpr double kSecondsPerInstructionPerRootActor = 6.65e-8;
inline constexpr double kSecondsPerMessagePerRootActor = 1.92e-7;
inline constexpr double kSecondsPerActor = 8.2e-5;
// Building the platform and finding which replicas run for all (replica_symmetry.h), per route or
// its worth (cluster_platform.h): 102,400 GPUs (4.5 M routes' worth) took 8.1-9.0 s where two
// replicas ran (sim/README.md).
inline constexpr double kSecondsPerRoute = 2e-6;

struct SimulationSize {
  std::int64_t instructions = 0;  // executed, over every actor and step
  std::int64_t actors = 0;        // one per rank of every replica
  std::int64_t routes = 0;        // of the cluster platform (cluster_platform.h); 0: ideal network
  double bytes = 0;               // memory estimate: stacks, instructions, traces, routes
  double seconds = 0;             // time estimate (the time model above)
  bool lower_bound = false;       // counted before the schedule exists: at least these
};

// a + b for counts that may already be saturated (ExpertAllToAll::MessageEquivalents): at most
// the saturated value, never an overflow.
std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b);

// The size of simulating `instructions` instructions per replica and step (every rank of one
// replica; `messages` of them messages between replicas) run by `p` ranks in each of `replicas`
// replicas for `steps` steps on a platform of `routes` routes. `timed_replicas` (-1: all) of the
// replicas are certain to run (replica_symmetry.h may run fewer than all, the others being their
// copies): the instructions, actors, memory and time are counted for them, a lower bound when
// fewer run than are known to. `message_equivalents` (-1: `messages`) is what the messages cost
// the solver's time in messages (an all-to-all comm costs more than one:
// ExpertAllToAll::MessageEquivalents); counts and memory take `messages`. Saturates instead
// of overflowing.
SimulationSize EstimateSimulationSize(std::int64_t instructions, std::int64_t p,
                                      std::int64_t replicas, std::int64_t steps,
                                      std::int64_t routes, std::int64_t messages = 0,
                                      std::int64_t timed_replicas = -1,
                                      std::int64_t message_equivalents = -1);

// The same before the schedule exists, as a lower bound (p*v*m chunks of kMinInstructionsPerChunk
// instructions in each of `running_replicas`, those certain to run): a request it refuses is
// certainly too large, and building its schedule would already cost time and memory in
// proportion. The lowered program is then checked exactly.
SimulationSize LowerBoundSimulationSize(std::int64_t p, std::int64_t v, std::int64_t m,
                                        std::int64_t replicas, std::int64_t steps,
                                        std::int64_t routes, std::int64_t running_replicas = 1);

// OK within every limit, else InvalidArgument "<request>: the simulation would execute N
// instructions on A actors ... (about X GB and Y s); the limits are ..." naming the first count
// over its limit. `request` names the inputs ("--pp 16384 -m 976").
Status CheckSimulationSize(const SimulationSize& size, const std::string& request);

}  // namespace pipette
