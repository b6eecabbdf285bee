#include "sim/sim_engine.h"

#include <malloc.h>
#include <xbt/log.h>

#include <iterator>
#include <simgrid/s4u.hpp>
#include <string>

#include "sim/simulation_size.h"

// AddressSanitizer builds (PIPETTE_SANITIZE, PIPETTE_FUZZ): GCC defines __SANITIZE_ADDRESS__,
// clang answers __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define PIPETTE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PIPETTE_ASAN 1
#endif
#endif

namespace pipette {

std::unique_ptr<simgrid::s4u::Engine> MakeEngine() {
  char name[] = "pipette";
#ifdef PIPETTE_ASAN
  // SimGrid's default contexts switch stacks without telling ASan (Debian's SimGrid is not built
  // with its sanitizer hooks): ASan warns "ignoring requested __asan_handle_no_return ... False
  // positive error reports may follow" when an actor is killed (an exception). Threads it
  // follows. The factory is chosen in the constructor, so from the command line (quietly).
  char quiet[] = "--log=root.thresh:critical";
  char factory[] = "--cfg=contexts/factory:thread";
  char* argv[] = {name, quiet, factory, nullptr};
#else
  char* argv[] = {name, nullptr};
#endif
  int argc = static_cast<int>(std::size(argv)) - 1;
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  xbt_log_control_set("root.thresh:critical");
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  // Every rate recomputed at each change (Full), not SimGrid's default lazy update, which in 3.32
  // misallocates contended patterns: eight 1 GB flows into one 50 GB/s NIC, beside 32 flows on
  // other NICs, end at 0.06 s instead of 8 GB / 50 GB/s = 0.16 s (a link carrying more than its
  // bandwidth; tests/sim/fabric_platform_test.cc ContendedNicCarriesExactlyItsBandwidth). Full is
  // also no slower at scale (sim/README.md: 43 s against 47.5 s at 16,384 GPUs).
  simgrid::s4u::Engine::set_config("network/optim:Full");
  // No TCP window bound on any flow. Not "TCP-gamma:0": SimGrid 3.32 bounds a comm given a rate
  // (Comm::set_rate, the tree collectives' cap) by min(rate, gamma / (2 latency)), which gamma 0
  // turns into 0, "unbounded" (src/surf/network_cm02.cpp, comm_action_set_variable). A huge gamma
  // bounds nothing else either.
  simgrid::s4u::Engine::set_config("network/TCP-gamma:1e300");
  // Each simulated rank's stack: SimGrid's default is 8 MiB; RunRank needs under 6 KiB
  // (sim/README.md). SimGrid zeroes a stack it allocates (calloc), which makes every page of a
  // heap-allocated stack resident; an mmap-allocated one costs only the pages RunRank touches. So
  // every allocation of a stack's size is mmap'd (a fixed threshold also stops glibc from raising
  // it after a large free). No guard page: each would cost memory mappings per actor, and Linux
  // allows 65530 per process.
  mallopt(M_MMAP_THRESHOLD, kActorStackKiB * 1024);
  simgrid::s4u::Engine::set_config("contexts/stack-size:" + std::to_string(kActorStackKiB));
  simgrid::s4u::Engine::set_config("contexts/guard-size:0");
  return engine;
}

}  // namespace pipette
