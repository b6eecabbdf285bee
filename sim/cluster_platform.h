// ClusterPlatform: a ClusterSpec as a SimGrid 3.32 platform, built inside the running engine.
//
// One host per GPU, speed 1 flop/s (the engine executes the cost model's seconds). Inside a node
// (a full zone): every GPU has a split-duplex NVLink port to the NVSwitch (bandwidth per direction
// per GPU) and its own InfiniBand NIC (rail-optimised, one per GPU; with fewer NICs than GPUs the
// GPUs share them evenly); GPU-to-GPU routes cross the sender's port up and the receiver's down,
// each with half the NVLink latency, so a message of S bytes takes latency + S / bandwidth.
// Between nodes a route leaves through the sender's NIC, the node's uplink (the NICs' total
// bandwidth) and a single switch, and enters through the receiver's node uplink and NIC: half the
// InfiniBand latency on each NIC, none on the uplinks. (Fat-tree levels are not modelled yet: the
// switch is non-blocking.)
#pragma once

#include <string>
#include <vector>

#include "pipette/cluster/cluster_spec.h"

namespace simgrid::s4u {
class Host;
class NetZone;
}  // namespace simgrid::s4u

namespace pipette {

struct ClusterPlatform {
  std::vector<simgrid::s4u::Host*> gpus;  // node * gpus_per_node + gpu
};

// Builds `cluster` with names starting with `prefix`, as a child of `parent` (nullptr: as the
// engine's root zone). REQUIRES: a SimGrid engine exists and the network model is configured
// (MakeEngine).
ClusterPlatform BuildClusterPlatform(const ClusterSpec& cluster, const std::string& prefix,
                                     simgrid::s4u::NetZone* parent = nullptr);

}  // namespace pipette
