#include "sim/collectives.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <simgrid/s4u.hpp>

namespace pipette {
namespace {

namespace sg4 = simgrid::s4u;

int payload = 0;       // every message's (unused) data
void* sink = nullptr;  // where receives put it

// The latency and bandwidth (its slowest link) of the route from `from` to `to`.
struct RouteCost {
  double latency = 0;
  double bandwidth = std::numeric_limits<double>::infinity();
};

RouteCost RouteCostOf(sg4::Host* from, sg4::Host* to) {
  RouteCost hop;
  std::vector<sg4::Link*> links;
  from->route_to(to, links, &hop.latency);
  for (const sg4::Link* link : links)
    hop.bandwidth = std::min(hop.bandwidth, link->get_bandwidth());
  return hop;
}

std::uint64_t Bytes(double bytes) { return static_cast<std::uint64_t>(std::llround(bytes)); }

// How many of `steps` fall in segment g of `segments` (the first steps % segments get one more).
int StepsIn(int g, int steps, int segments) {
  return steps / segments + (g < steps % segments ? 1 : 0);
}

}  // namespace

int MessagesPerMember(CollectiveAlgorithm algorithm, int n) {
  if (n <= 1) return 0;
  if (algorithm == CollectiveAlgorithm::kRing) return std::min(kRingSegments, 2 * (n - 1));
  return 2 * 2 * 2 * kTreeChunks;  // at most: two trees, two phases, two children
}

CollectiveGroup::CollectiveGroup(const std::string& name, std::vector<sg4::Host*> members,
                                 CollectiveAlgorithm algorithm, int ring_size)
    : members_(std::move(members)),
      algorithm_(algorithm),
      ring_size_(ring_size > 0 ? ring_size : static_cast<int>(members_.size())) {
  const int per_member = algorithm == CollectiveAlgorithm::kRing ? 1 : 6;
  if (ring_size_ <= 1) return;
  for (int i = 0; i < size(); ++i) {
    for (int k = 0; k < per_member; ++k) {
      boxes_.push_back(sg4::Mailbox::by_name(fmt::format("{}-{}-{}", name, i, k)));
    }
  }
}

sg4::Mailbox* CollectiveGroup::Box(int i, int tree, int slot) const {
  if (algorithm_ == CollectiveAlgorithm::kRing) return boxes_[i];
  return boxes_[static_cast<std::size_t>(i) * 6 + tree * 3 + slot];
}

void CollectiveGroup::AllReduce(int i, double bytes) const {
  if (ring_size_ <= 1 || !(bytes > 0)) return;
  if (algorithm_ == CollectiveAlgorithm::kRing) {
    Ring(i, bytes);
    return;
  }
  // The second tree on a helper actor of the same host, so that both trees progress at once.
  const sg4::ActorPtr mirror =
      sg4::Actor::create("tree1", members_[i], [this, i, bytes] { Tree(1, i, bytes); });
  Tree(0, i, bytes);
  mirror->join();
}

void CollectiveGroup::Ring(int i, double bytes) const {
  const int n = ring_size_;
  const int steps = 2 * (n - 1);
  const int segments = std::min(kRingSegments, steps);
  const int next = (i + 1) % size();
  const double latency = RouteCostOf(members_[i], members_[next]).latency;
  for (int g = 0; g < segments; ++g) {
    const int k = StepsIn(g, steps, segments);
    sg4::CommPtr in = Box(i, 0, 0)->get_init()->set_dst_data(&sink, sizeof(sink));
    in->start();
    if (k > 1) sg4::this_actor::sleep_for((k - 1) * latency);
    sg4::CommPtr out = Box(next, 0, 0)->put_async(&payload, Bytes(k * bytes / n));
    in->wait();
    out->wait();
  }
}

void CollectiveGroup::Tree(int tree, int i, double bytes) const {
  const int n = size();
  const int q = tree == 0 ? i : n - 1 - i;  // heap position
  std::vector<int> children;
  for (int c : {2 * q + 1, 2 * q + 2}) {
    if (c < n) children.push_back(MemberAt(tree, c));
  }
  const int parent = q == 0 ? -1 : MemberAt(tree, (q - 1) / 2);
  const double chunk = bytes / 2 / kTreeChunks;
  // A message to `to`, capped at half its route's bandwidth (module comment).
  auto send = [&](int to, int slot) {
    const RouteCost hop = RouteCostOf(members_[i], members_[to]);
    sg4::CommPtr comm = Box(to, tree, slot)->put_init(&payload, Bytes(chunk));
    if (std::isfinite(hop.bandwidth)) comm->set_rate(hop.bandwidth / 2);
    comm->start();
    return comm;
  };
  // A message from child 0 or 1 (slot 0, 1) or the parent (slot 2), with the same cap (SimGrid
  // takes the rate of whichever side of a rendezvous comes second).
  auto receive = [&](int slot) {
    const int from = slot == 2 ? parent : children[slot];
    const RouteCost hop = RouteCostOf(members_[from], members_[i]);
    sg4::CommPtr comm = Box(i, tree, slot)->get_init()->set_dst_data(&sink, sizeof(sink));
    if (std::isfinite(hop.bandwidth)) comm->set_rate(hop.bandwidth / 2);
    comm->start();
    return comm;
  };
  // Reduce: chunk j goes up once the children's chunk j arrived (the next chunk's receives are
  // posted before sending, so children keep sending).
  auto post_children = [&] {
    std::vector<sg4::CommPtr> comms;
    for (std::size_t c = 0; c < children.size(); ++c) comms.push_back(receive(static_cast<int>(c)));
    return comms;
  };
  std::vector<sg4::CommPtr> from_children = post_children();
  for (int j = 0; j < kTreeChunks; ++j) {
    sg4::Comm::wait_all(from_children);
    from_children = j + 1 < kTreeChunks ? post_children() : std::vector<sg4::CommPtr>{};
    if (parent >= 0) {
      send(parent, q % 2 == 1 ? 0 : 1)->wait();  // the first or second child
    }
  }
  // Broadcast: chunk j goes down once it came from the parent.
  sg4::CommPtr from_parent = parent >= 0 ? receive(2) : sg4::CommPtr();
  for (int j = 0; j < kTreeChunks; ++j) {
    if (from_parent) {
      from_parent->wait();
      from_parent = j + 1 < kTreeChunks ? receive(2) : sg4::CommPtr();
    }
    std::vector<sg4::CommPtr> to_children;
    for (int child : children) to_children.push_back(send(child, 2));
    sg4::Comm::wait_all(to_children);
  }
}

}  // namespace pipette
