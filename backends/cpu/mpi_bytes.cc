#include "mpi_bytes.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace pipette::cpu {
namespace {

// Splits the concatenation `all` into one vector per rank.
std::vector<std::vector<char>> Split(const std::vector<char>& all, const std::vector<int>& counts,
                                     const std::vector<int>& offsets) {
  std::vector<std::vector<char>> out;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  }
  return out;
}

// Offsets of consecutive blocks of `counts`; returns their total.
int Offsets(const std::vector<int>& counts, std::vector<int>& offsets) {
  offsets.resize(counts.size());
  int at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = at;
    at += counts[r];
  }
  return at;
}

}  // namespace

Result<std::vector<std::vector<char>>> GatherBytes(const std::vector<char>& mine, MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const long long n = static_cast<long long>(mine.size());
  std::vector<long long> sizes(size);
  MPI_Gather(&n, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, comm);
  long long total = 0;
  for (const long long s : sizes) total += s;
  int fits = rank != 0 || total <= std::numeric_limits<int>::max();
  MPI_Bcast(&fits, 1, MPI_INT, 0, comm);
  if (!fits) {
    return Status::Internal(
        fmt::format("the gather of {} bytes exceeds MPI's 2 GiB count limit; trace fewer steps "
                    "(--trace-steps)",
                    total));
  }
  std::vector<int> counts(sizes.begin(), sizes.end()), offsets;
  const int at = Offsets(counts, offsets);
  std::vector<char> all(rank == 0 ? std::max(at, 1) : 1);
  MPI_Gatherv(mine.data(), static_cast<int>(n), MPI_CHAR, all.data(), counts.data(), offsets.data(),
              MPI_CHAR, 0, comm);
  if (rank != 0) return std::vector<std::vector<char>>();
  return Split(all, counts, offsets);
}

std::vector<std::vector<char>> AllGatherBytes(const std::vector<char>& mine, MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(size), offsets;
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  const int total = Offsets(counts, offsets);
  std::vector<char> all(std::max(total, 1));
  MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR,
                 comm);
  return Split(all, counts, offsets);
}

}  // namespace pipette::cpu
