#include "pipette/cluster/cluster_spec.h"

namespace pipette {

std::string_view TopologyName(Topology topology) {
  switch (topology) {
    case Topology::kSingleSwitch:
      return "single-switch";
    case Topology::kFatTree:
      return "fat-tree";
  }
  return "?";
}

}  // namespace pipette
