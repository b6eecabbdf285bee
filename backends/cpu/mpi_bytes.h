// Byte gathers over MPI: how the CPU engine moves variable-sized records (parameter names,
// tensors, traces; packed with pipette/common/byte_codec.h) between ranks. The gathers are
// collectives: every rank of `comm` calls them. Not thread-safe; call from the rank's MPI thread.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pipette/common/byte_codec.h"
#include "pipette/common/status.h"

namespace pipette::cpu {

// Gathers every rank's bytes of `comm` on its rank 0 (empty elsewhere), one vector per rank.
// Internal when the total exceeds MPI's int counts (2 GiB); every rank gets the same answer.
Result<std::vector<std::vector<char>>> GatherBytes(const std::vector<char>& mine, MPI_Comm comm);

// Every rank's bytes on every rank.
std::vector<std::vector<char>> AllGatherBytes(const std::vector<char>& mine, MPI_Comm comm);

}  // namespace pipette::cpu
