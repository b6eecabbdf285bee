// SendRecvGroups: how the NCCL fabric (nccl_fabric.h) batches one rank's pipeline messages into
// NCCL groups (ncclGroupStart/End), written once as plain C++ so that a model of the fabric can
// check it on the host against every schedule's lowered program (tests/cuda/send_recv_groups_test).
//
// The rule: the sends and receives the program places between two computes go out as one group,
// issued just before the second compute (or at the end of the program); the communication stream
// runs the groups in that order, each after the computes queued before it.
//
// Why it cannot deadlock, even with messages too large for any buffer (a send completes only once
// its receive is running): Lower() makes every rank's list a projection of one global sequence in
// which each send sits next to its receive. A group holds ops of consecutive moments of that
// sequence, and nothing it waits for (the computes before it, the groups before it, its ops'
// partners) belongs to a later moment than its own ops: by induction over the sequence, every op
// runs once the moments before it have. NCCL's one ordering rule inside a group (ops to the same
// peer in the same direction run in order) is the order of the sequence too. The model checks this
// for every built-in schedule at p = 2, 4, 8, and finds the cycle of a fabric that posts each
// receive only when its data is needed.
//
// Example (one 1F1B middle rank): RECV_F0 | F0 | SEND_F0 RECV_B0 | B0 | SEND_B0
//   groups {RECV_F0} {SEND_F0 RECV_B0} {SEND_B0}
#pragma once

#include <vector>

#include "pipette/schedule/program.h"

namespace pipette::cuda {

// One NCCL group of a rank's step: its SEND and RECV instructions (indices into the rank's
// program, in program order) and how many of the rank's computes are queued before it is issued.
struct SendRecvGroup {
  std::vector<int> ops;
  int computes_before = 0;
};

// The groups the fabric issues for `rank`'s program, in issue order.
std::vector<SendRecvGroup> SendRecvGroups(const RankProgram& rank);

}  // namespace pipette::cuda
