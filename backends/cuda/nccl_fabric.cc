#include "nccl_fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <set>
#include <stdexcept>
#include <thread>

#include "check.h"
#include "pipette/common/byte_codec.h"

namespace pipette::cuda {

NcclFabric::NcclFabric(int p, Watchdog& dog) : dog_(dog), p_(p) {
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  pp_rank_ = world_rank_ % p_;
  replica_ = world_rank_ / p_;
  PIPETTE_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
  ncclUniqueId id{};
  if (world_rank_ == 0) PIPETTE_NCCL_CHECK(ncclGetUniqueId(&id));
  Watched(dog_, "rank 0's NCCL id",
          [&] { MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD); });
  Watched(dog_, "the other ranks to create the NCCL communicator", [&] {
    PIPETTE_NCCL_CHECK(ncclCommInitRank(&world_, world_size_, id, world_rank_));
    PIPETTE_NCCL_CHECK(ncclCommSplit(world_, replica_, pp_rank_, &pp_, nullptr));
    PIPETTE_NCCL_CHECK(ncclCommSplit(world_, pp_rank_, replica_, &dp_, nullptr));
  });
  MPI_Comm_split(MPI_COMM_WORLD, replica_, pp_rank_, &mpi_pp_);
}

NcclFabric::~NcclFabric() {
  // Torn down by an exception, kernels may still wait on a peer: abort rather than wait for them.
  if (std::uncaught_exceptions() > 0) AbortAll();
  (void)cudaStreamSynchronize(comm_);
  for (auto& [key, event] : arrived_) (void)cudaEventDestroy(event);
  for (auto& [event, what] : waited_) (void)cudaEventDestroy(event);
  for (auto& [ranks, comm] : groups_) (void)ncclCommDestroy(comm);
  for (ncclComm_t comm : {dp_, pp_, world_}) {
    if (comm != nullptr) (void)ncclCommDestroy(comm);
  }
  if (mpi_pp_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_pp_);
  (void)cudaStreamDestroy(comm_);
}

void NcclFabric::AbortAll() {
  for (auto& [ranks, comm] : groups_) (void)ncclCommAbort(comm);
  groups_.clear();
  for (ncclComm_t* comm : {&dp_, &pp_, &world_}) {
    if (*comm != nullptr) (void)ncclCommAbort(*comm);
    *comm = nullptr;
  }
}

void NcclFabric::CheckAsync() {
  std::vector<ncclComm_t> comms = {world_, pp_, dp_};
  for (auto& [ranks, comm] : groups_) comms.push_back(comm);
  for (ncclComm_t comm : comms) {
    ncclResult_t async = ncclSuccess;
    if (comm == nullptr || ncclCommGetAsyncError(comm, &async) != ncclSuccess) continue;
    if (async != ncclSuccess && async != ncclInProgress) {
      AbortAll();
      throw std::runtime_error(
          fmt::format("NCCL error on world rank {}: {}", world_rank_, ncclGetErrorString(async)));
    }
  }
}

void NcclFabric::WaitStream(cudaStream_t stream, const std::string& what) {
  cudaEvent_t event = nullptr;
  PIPETTE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  PIPETTE_CUDA_CHECK(cudaEventRecord(event, stream));
  WaitEvent(event, what);
  PIPETTE_CUDA_CHECK(cudaEventDestroy(event));
}

void NcclFabric::WaitMpi(MPI_Request* request, const std::string& what) {
  Watched(dog_, what, [&] {
    int done = 0;
    while (MPI_Test(request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
      std::this_thread::yield();
    }
  });
}

// ---- pipeline messages ----

void NcclFabric::Send(int peer, std::int64_t slot, DeviceTensor tensor, RankDevice&) {
  queued_.push_back({true, peer, slot, tensor.data(), tensor.size()});
  sending_.push_back(std::move(tensor));
}

void NcclFabric::PostRecv(int peer, std::int64_t slot, DeviceTensor buffer, RankDevice&) {
  queued_.push_back({false, peer, slot, buffer.data(), buffer.size()});
  posted_[{peer, slot}] = std::move(buffer);
}

void NcclFabric::Flush(RankDevice& dev) {
  if (queued_.empty()) return;
  OrderStreams(dev.stream(),
               comm_);  // the sends' data and the receives' buffers exist on the stream
  // Connections are set up lazily, inside the first call to each peer: watched like a wait.
  Watched(dog_, "the pipeline peers to connect (NCCL send/recv)", [&] {
    PIPETTE_NCCL_CHECK(ncclGroupStart());
    for (const PendingOp& op : queued_) {
      const auto n = static_cast<std::size_t>(op.n);
      if (op.send) {
        PIPETTE_NCCL_CHECK(ncclSend(op.data, n, ncclFloat, op.peer, pp_, comm_));
      } else {
        PIPETTE_NCCL_CHECK(ncclRecv(op.data, n, ncclFloat, op.peer, pp_, comm_));
      }
    }
    PIPETTE_NCCL_CHECK(ncclGroupEnd());
  });
  for (const PendingOp& op : queued_) {
    if (op.send) continue;
    cudaEvent_t event = nullptr;
    PIPETTE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    PIPETTE_CUDA_CHECK(cudaEventRecord(event, comm_));
    arrived_[{op.peer, op.slot}] = event;
  }
  queued_.clear();
}

DeviceTensor NcclFabric::WaitRecv(int peer, std::int64_t slot, RankDevice& dev,
                                  const std::string& what) {
  Flush(dev);
  const auto key = std::make_pair(peer, slot);
  const cudaEvent_t event = arrived_.at(key);
  arrived_.erase(key);
  PIPETTE_CUDA_CHECK(cudaStreamWaitEvent(dev.stream(), event, 0));
  waited_.emplace_back(event, what);  // EndProgram waits for it, naming it
  auto it = posted_.find(key);
  DeviceTensor buffer = std::move(it->second);
  posted_.erase(it);
  return buffer;
}

void NcclFabric::WaitEvent(cudaEvent_t event, const std::string& what) {
  Watched(dog_, what, [&] {
    cudaError_t state;
    while ((state = cudaEventQuery(event)) == cudaErrorNotReady) {
      CheckAsync();
      std::this_thread::yield();
    }
    PIPETTE_CUDA_CHECK(state);
  });
}

void NcclFabric::EndProgram(RankDevice& dev) {
  Flush(dev);
  for (auto& [event, what] : waited_) {  // in program order: the first missing one is named
    WaitEvent(event, what);
    PIPETTE_CUDA_CHECK(cudaEventDestroy(event));
  }
  waited_.clear();
  WaitStream(dev.stream(), "this rank's computes of the step");
  WaitStream(comm_, "this step's sends to complete");
  sending_.clear();  // freed on the compute stream; the communication stream is done with them
}

// ---- collectives ----

void NcclFabric::Barrier(const std::string& what) {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  WaitMpi(&request, what);
}

void NcclFabric::AllReduceReplicas(float* data, std::int64_t n, RankDevice& dev) {
  OrderStreams(dev.stream(), comm_);
  Watched(dog_, "the other replicas to connect (NCCL all-reduce)", [&] {
    PIPETTE_NCCL_CHECK(
        ncclAllReduce(data, data, static_cast<std::size_t>(n), ncclFloat, ncclSum, dp_, comm_));
  });
  OrderStreams(comm_, dev.stream());
  WaitStream(comm_, "the data-parallel gradient all-reduce");
}

std::vector<std::vector<std::string>> NcclFabric::GatherNames(
    const std::vector<std::string>& mine) {
  ByteWriter out;
  out.Put(static_cast<std::uint64_t>(mine.size()));
  for (const std::string& name : mine) out.PutString(name);
  const int count = static_cast<int>(out.bytes().size());
  std::vector<int> counts(p_), offsets(p_);
  std::vector<char> all;
  Watched(dog_, "the other ranks to list their parameters", [&] {
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, mpi_pp_);
    int total = 0;
    for (int r = 0; r < p_; ++r) offsets[r] = std::exchange(total, total + counts[r]);
    all.resize(static_cast<std::size_t>(total));
    MPI_Allgatherv(out.bytes().data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(),
                   MPI_BYTE, mpi_pp_);
  });
  std::vector<std::vector<std::string>> names(p_);
  std::map<std::string, std::vector<int>> holders;
  for (int r = 0; r < p_; ++r) {
    const std::vector<char> bytes(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
    ByteReader in(bytes);
    const auto n = in.Get<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
      names[r].push_back(in.GetString());
      holders[names[r].back()].push_back(r);
    }
  }
  std::set<std::vector<int>> groups;
  for (const auto& [name, ranks] : holders) {
    if (ranks.size() > 1) groups.insert(ranks);
  }
  SplitGroups({groups.begin(), groups.end()});
  return names;
}

void NcclFabric::SplitGroups(const std::vector<std::vector<int>>& groups) {
  Watched(dog_, "the other ranks to split the shared-parameter communicators", [&] {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const bool member =
          std::find(groups[g].begin(), groups[g].end(), pp_rank_) != groups[g].end();
      ncclComm_t comm = nullptr;
      PIPETTE_NCCL_CHECK(ncclCommSplit(pp_, member ? static_cast<int>(g) : NCCL_SPLIT_NOCOLOR,
                                       pp_rank_, &comm, nullptr));
      if (member) groups_[groups[g]] = comm;
    }
  });
}

void NcclFabric::AllReduceAmong(const std::vector<int>& ranks, const std::string& name, float* data,
                                std::int64_t n, RankDevice& dev) {
  OrderStreams(dev.stream(), comm_);
  Watched(dog_, fmt::format("the other holders of {} to connect (NCCL all-reduce)", name), [&] {
    PIPETTE_NCCL_CHECK(ncclAllReduce(data, data, static_cast<std::size_t>(n), ncclFloat, ncclSum,
                                     groups_.at(ranks), comm_));
  });
  OrderStreams(comm_, dev.stream());
  WaitStream(comm_, fmt::format("the other holders of {} to sum its gradient", name));
}

StepTotals NcclFabric::ReduceStep(double loss, double start, double end) {
  double in[3] = {loss, -start, end}, sum = 0, max[2] = {0, 0};
  MPI_Request requests[2];
  MPI_Ireduce(&in[0], &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &requests[0]);
  MPI_Ireduce(&in[1], max, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &requests[1]);
  WaitMpi(&requests[0], "the loss reduction");
  WaitMpi(&requests[1], "the step time reduction");
  return {sum, -max[0], max[1]};
}

std::vector<std::vector<char>> NcclFabric::GatherBytes(const std::vector<char>& mine) {
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(world_size_), offsets(world_size_);
  std::vector<char> all;
  Watched(dog_, "the trace gather", [&] {
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < world_size_; ++r) offsets[r] = std::exchange(total, total + counts[r]);
    all.resize(static_cast<std::size_t>(total));
    MPI_Gatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE,
                0, MPI_COMM_WORLD);
  });
  std::vector<std::vector<char>> out;
  if (world_rank_ != 0) return out;
  for (int r = 0; r < world_size_; ++r) {
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  }
  return out;
}

}  // namespace pipette::cuda
