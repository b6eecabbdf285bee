// Collectives decomposed into messages on the simulated platform: the all-reduce of one group of
// hosts (a data-parallel group: the same pipeline rank in every replica), run by the actors of its
// members, so its messages contend with everything else on the NICs, uplinks and NVLink ports they
// cross. Each collective costs O(n) messages (a bounded number per member), not the O(n^2) of a
// ring simulated step by step (ring_allreduce.h), and on an idle network takes exactly the
// alpha-beta time of pipette/cost/collectives.h.
//
// Ring (reduce-scatter, then all-gather): the 2(n-1) synchronous steps, each moving bytes/n to the
// next member, are grouped into at most kRingSegments segments. In a segment of k steps a member
// waits (k-1) x its hop's latency, then sends k x bytes/n to the next member in one message, and
// starts the next segment once that message and the one from its predecessor have both arrived
// (mailbox rendezvous). On an idle network a segment takes k (alpha + bytes/(n beta)) on every hop,
// so the ring takes 2(n-1)(alpha + bytes/(n beta)) of its slowest hop: RingAllReduceSeconds,
// exactly. Under contention each segment's bytes share the links they cross; the error against a
// step-by-step ring is that a segment's k steps move their bytes as one flow (the latencies go
// first), and a delay on one hop reaches its neighbours once per segment instead of once per step.
//
// Tree (NCCL's double binary tree, NCCL 2.4, "Massively Scale Your Deep Learning Training with
// NCCL 2.4", NVIDIA developer blog, 2019): two binary trees over the members, each carrying half of
// the bytes, the second the mirror of the first (heap order over the members and over the reversed
// members: a member is an inner node in at most one of them). Each tree reduces up (a member
// forwards chunk j to its parent once its children's chunk j have arrived), then broadcasts down,
// pipelined in kTreeChunks chunks. A member's port carries at most two of the trees' flows at a
// time in each direction (its two children, or its parents in both trees), and every tree message
// is capped at half its route's bandwidth, so on an idle network each chunk hop takes alpha +
// bytes/(kTreeChunks beta) whatever the timing, and the all-reduce takes TreeAllReduceSeconds: 2 (D
// + G - 1)(alpha + bytes/(G beta)), D = floor(log2 n), G = kTreeChunks. Against NCCL's finer
// pipeline (chunks much smaller than the bytes) this adds 2(G-1) alpha of latency and makes the
// bandwidth term (D+G-1)/G times a streaming tree's 2 bytes/beta (2.1x at n = 1024, 1.25x at n =
// 8); at small n, where a port carries one tree flow, the cap also halves the bandwidth a real tree
// would get there.
//
// SimGrid calls live here (sim/). Used from the members' actors only.
#pragma once

#include <string>
#include <vector>

#include "pipette/cost/collectives.h"

namespace simgrid::s4u {
class Host;
class Mailbox;
}  // namespace simgrid::s4u

namespace pipette {

enum class CollectiveAlgorithm { kRing, kTree };

// At most this many segments per ring (2(n-1) steps when fewer), and chunks per tree.
inline constexpr int kRingSegments = 4;
inline constexpr int kTreeChunks = kTreeAllReduceChunks;

// The messages one member of an n-member all-reduce sends (its share of the O(n) total).
int MessagesPerMember(CollectiveAlgorithm algorithm, int n);

// One group of hosts that all-reduce together, any number of times. Member i's all-reduces must be
// called in the same order on every member (as NCCL requires of one communicator).
class CollectiveGroup {
 public:
  // `name` must be unique in the engine (it names the group's mailboxes). REQUIRES: a running
  // engine whose platform holds `members` (ring order; the trees' heap order), at least one.
  // `ring_size` > 0 (rings only): the members stand for the first of a ring of that many, a
  // multiple of theirs, whose members i and i + size() do the same at every moment
  // (replica_symmetry.h, ReplicaPeriod): each moves ring_size's steps and shares, and the last
  // sends to the first (the image of its real successor).
  CollectiveGroup(const std::string& name, std::vector<simgrid::s4u::Host*> members,
                  CollectiveAlgorithm algorithm, int ring_size = 0);

  int size() const { return static_cast<int>(members_.size()); }
  // The members of the all-reduce: size(), or the ring these stand for.
  int ring_size() const { return ring_size_; }

  // Member `i`'s part of an all-reduce of `bytes`: returns when it is done. Called from an actor
  // on member i's host, once per all-reduce on every member. One member: returns at once.
  void AllReduce(int i, double bytes) const;

 private:
  void Ring(int i, double bytes) const;
  void Tree(int tree, int i, double bytes) const;
  // The member at heap position q of `tree` (0: the members' order; 1: reversed), and back.
  int MemberAt(int tree, int q) const { return tree == 0 ? q : size() - 1 - q; }
  // Mailbox of member i: from its predecessor (ring), or in `tree` from its child 0/1 (reduce) or
  // its parent (broadcast, slot 2).
  simgrid::s4u::Mailbox* Box(int i, int tree, int slot) const;

  std::vector<simgrid::s4u::Host*> members_;
  CollectiveAlgorithm algorithm_;
  int ring_size_;
  std::vector<simgrid::s4u::Mailbox*> boxes_;  // ring: one per member; tree: six per member
};

}  // namespace pipette
