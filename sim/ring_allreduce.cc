#include "sim/ring_allreduce.h"

#include <fmt/core.h>

#include <algorithm>
#include <simgrid/s4u.hpp>

namespace pipette {

namespace sg4 = simgrid::s4u;

Status LaunchRingAllReduce(const std::vector<sg4::Host*>& ring, double bytes, double* finish) {
  if (ring.empty() || !(bytes >= 0 && bytes <= kMaxRingBytes)) {
    return Status::InvalidArgument(
        fmt::format("ring all-reduce of {} bytes over {} hosts: needs at least one host and a "
                    "number of bytes in [0, {:g}]",
                    bytes, ring.size(), kMaxRingBytes));
  }
  const int n = static_cast<int>(ring.size());
  *finish = 0;
  for (int i = 0; i < n; ++i) {
    sg4::Actor::create(fmt::format("ring{}", i), ring[i], [=] {
      static int payload = 0;
      auto* next = sg4::Mailbox::by_name(fmt::format("ring-to{}", (i + 1) % n));
      auto* mine = sg4::Mailbox::by_name(fmt::format("ring-to{}", i));
      const auto chunk = static_cast<uint64_t>(bytes / n);
      for (int step = 0; step < 2 * (n - 1); ++step) {  // reduce-scatter, then all-gather
        sg4::CommPtr send = next->put_async(&payload, chunk);
        mine->get<int>();
        send->wait();
      }
      *finish = std::max(*finish, sg4::Engine::get_clock());
    });
  }
  return Status::Ok();
}

}  // namespace pipette
