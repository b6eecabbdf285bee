#include "send_recv_groups.h"

namespace pipette::cuda {

std::vector<SendRecvGroup> SendRecvGroups(const RankProgram& rank) {
  std::vector<SendRecvGroup> groups;
  SendRecvGroup queued;
  for (int k = 0; k < static_cast<int>(rank.instructions.size()); ++k) {
    if (!IsCompute(rank.instructions[k].action.kind)) {
      queued.ops.push_back(k);
      continue;
    }
    if (!queued.ops.empty()) groups.push_back(queued);  // issued before this compute
    queued.ops.clear();
    ++queued.computes_before;
  }
  if (!queued.ops.empty()) groups.push_back(queued);  // issued at the end of the program
  return groups;
}

}  // namespace pipette::cuda
