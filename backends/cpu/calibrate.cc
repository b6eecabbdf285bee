#include "calibrate.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "gpt.h"
#include "pipette/common/build_info.h"
#include "pipette/common/host_machine.h"
#include "pipette/engine/measured_costs.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/engine/train_plan.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/message.h"
#include "pipette/schedule/registry.h"
#include "tensor.h"

namespace pipette::cpu {
namespace {

int RankOf(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int SizeOf(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

// A barrier whose waiting ranks sleep (100 us at a time) instead of spinning on a core.
void SleepyBarrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  int done = 0;
  const timespec pause{0, 100'000};
  while (MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done) nanosleep(&pause, nullptr);
}

// One round trip of `count` floats between ranks 0 and 1, as the engine moves a message: the
// receiver's MPI_Irecv posted first, MPI_Isend, MPI_Wait on both. Returns rank 0's time.
double RoundTrip(int rank, int count, std::vector<float>& out, std::vector<float>& in,
                 MPI_Comm comm) {
  MPI_Request requests[2];
  const double start = MPI_Wtime();
  if (rank == 0) {
    MPI_Irecv(in.data(), count, MPI_FLOAT, 1, 1, comm, &requests[0]);
    MPI_Isend(out.data(), count, MPI_FLOAT, 1, 0, comm, &requests[1]);
    MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
    MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
  } else {
    MPI_Irecv(in.data(), count, MPI_FLOAT, 0, 0, comm, &requests[0]);
    MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    MPI_Isend(out.data(), count, MPI_FLOAT, 0, 1, comm, &requests[1]);
    MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
  }
  return MPI_Wtime() - start;
}

// The RankRuntime of MeasureInstructionOverhead: no work, real 0-byte messages tagged by their
// message slot on `comm`, as CpuRankRuntime tags them; it adds up the time spent waiting.
class OverheadRuntime final : public RankRuntime {
 public:
  OverheadRuntime(MPI_Comm comm, int m) : comm_(comm), m_(m) {}

  double Now() override { return MPI_Wtime(); }
  void Compute(const Instruction&) override {}
  void Send(const Instruction& ins, std::int64_t) override {
    MPI_Request request;
    MPI_Isend(&payload_, 0, MPI_FLOAT, ins.peer, Tag(ins), comm_, &request);
    sends_.push_back(request);
  }
  void PostRecv(const Instruction& ins, std::int64_t) override {
    MPI_Irecv(&payload_, 0, MPI_FLOAT, ins.peer, Tag(ins), comm_,
              &recvs_[MessageOf(ins.action).key()]);
  }
  double WaitRecv(const Instruction& ins) override {
    const double start = MPI_Wtime();
    auto it = recvs_.find(MessageOf(ins.action).key());
    MPI_Wait(&it->second, MPI_STATUS_IGNORE);
    recvs_.erase(it);
    const double end = MPI_Wtime();
    waited_ += end - start;
    return end;
  }
  void EndProgram(int) override {
    MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
    sends_.clear();
  }
  // The waits since the last call, in seconds.
  double TakeWaited() { return std::exchange(waited_, 0.0); }

 private:
  int Tag(const Instruction& ins) const { return static_cast<int>(MessageOf(ins.action).slot(m_)); }

  MPI_Comm comm_;
  int m_;
  float payload_ = 0;
  double waited_ = 0;
  std::vector<MPI_Request> sends_;
  std::unordered_map<std::int64_t, MPI_Request> recvs_;
};

// A GEMM of the engine: C (m x n) = op(A) op(B), inner size k.
struct GemmShape {
  bool trans_a, trans_b;
  int m, n, k;
};

// The F, I and W products of every linear layer of the default model (tiny) at the default
// micro-batch size: x (tokens x in) times W^T (out x in); dx = dy W; dW = dy^T x.
std::vector<GemmShape> EngineGemms() {
  const DecoderSpec spec = TinyDecoder();
  const int tokens = TrainOptions{}.micro_batch_size * spec.max_positions;
  const int h = spec.hidden;
  const std::pair<int, int> linears[] = {
      {h, 3 * h}, {h, h}, {h, spec.ffn_hidden}, {spec.ffn_hidden, h}, {h, spec.vocab}};
  std::vector<GemmShape> shapes;
  for (const auto& [in, out] : linears) {
    shapes.push_back({false, true, tokens, out, in});
    shapes.push_back({false, false, tokens, in, out});
    shapes.push_back({true, false, out, in, tokens});
  }
  return shapes;
}

// FLOP/s of this rank running `shapes` for at least `seconds`.
double RunGemms(const std::vector<GemmShape>& shapes, double seconds) {
  int largest = 0;
  for (const GemmShape& s : shapes) largest = std::max({largest, s.m * s.k, s.k * s.n, s.m * s.n});
  std::vector<float> a(largest, 0.5f), b(largest, 0.25f), c(largest, 0.0f);
  double flops = 0;
  const double start = MPI_Wtime();
  double elapsed = 0;
  do {
    for (const GemmShape& s : shapes) {
      const int lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
      Gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(),
           s.n);
      flops += 2.0 * s.m * s.n * s.k;
    }
    elapsed = MPI_Wtime() - start;
  } while (elapsed < seconds);
  return flops / elapsed;
}

}  // namespace

std::vector<std::int64_t> CalibrationSizes(std::int64_t max_bytes) {
  std::vector<std::int64_t> sizes = {0};
  for (std::int64_t b = 4; b <= max_bytes; b *= 2) sizes.push_back(b);
  return sizes;
}

double EstimateCalibrationSeconds(int repeats, std::int64_t max_bytes) {
  const double per_repeat =
      0.002 + 8.0 * static_cast<double>(max_bytes) / 3e9 + 128.0 * (1 << 20) / 1e10;
  return 2.0 + (static_cast<double>(repeats) + 1.0) * per_repeat;
}

std::vector<TimedSize> MeasureP2p(const std::vector<std::int64_t>& sizes, int repeats,
                                  MPI_Comm comm) {
  const int rank = RankOf(comm);
  std::vector<TimedSize> out;
  for (const std::int64_t bytes : sizes) {
    if (rank <= 1) {
      const int count = static_cast<int>(bytes / 4);
      std::vector<float> send(std::max(count, 1), 1.0f), recv(std::max(count, 1));
      std::vector<double> times;
      (void)RoundTrip(rank, count, send, recv, comm);  // warm-up: connections, first touch
      for (int r = 0; r < repeats; ++r)
        times.push_back(RoundTrip(rank, count, send, recv, comm) / 2);
      if (rank == 0) out.push_back({bytes, Median(times)});
    }
    SleepyBarrier(comm);
  }
  return out;
}

std::vector<TimedSize> MeasureAllReduce(const std::vector<std::int64_t>& sizes, int repeats,
                                        MPI_Comm comm) {
  const int rank = RankOf(comm);
  std::vector<TimedSize> out;
  for (const std::int64_t bytes : sizes) {
    const int count = static_cast<int>(bytes / 4);
    std::vector<float> buffer(std::max(count, 1), 1.0f);
    std::vector<double> slowest;
    for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buffer.data(), count, MPI_FLOAT, MPI_SUM, comm);
      const double mine = MPI_Wtime() - start;
      double max = 0;
      MPI_Reduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
      if (r >= 0) slowest.push_back(max);
    }
    if (rank == 0) out.push_back({bytes, Median(slowest)});
  }
  return out;
}

double MeasureInstructionOverhead(int repeats, MPI_Comm comm) {
  const int rank = RankOf(comm), p = SizeOf(comm);
  const int m = 8 * p;
  const Program program = Lower(MakeSchedule("1f1b", {.p = p, .v = 1, .m = m}).value()).value();
  const double instructions = static_cast<double>(program.ranks[rank].instructions.size());
  OverheadRuntime runtime(comm, m);
  std::vector<TraceEvent> trace;
  std::vector<double> per_instruction;
  for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
    trace.clear();
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    RunRank(program, rank, 0, MessageSizes{}, runtime, trace);
    const double mine = (MPI_Wtime() - start - runtime.TakeWaited()) / instructions;
    runtime.EndProgram(0);
    double max = 0;
    MPI_Reduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    if (r >= 0) per_instruction.push_back(max);
  }
  return rank == 0 ? Median(per_instruction) : 0;
}

double MeasureGemmFlops(bool all_ranks, double seconds, MPI_Comm comm) {
  const int rank = RankOf(comm);
  const std::vector<GemmShape> shapes = EngineGemms();
  double mine = 0;
  if (all_ranks) {
    MPI_Barrier(comm);
    mine = RunGemms(shapes, seconds);
  } else if (rank == 0) {
    mine = RunGemms(shapes, seconds);
  }
  SleepyBarrier(comm);
  double sum = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  if (rank != 0) return 0;
  return all_ranks ? sum / SizeOf(comm) : mine;
}

namespace {

constexpr std::int64_t kGemmArenaFloats = std::int64_t{32} << 20;  // 128 MiB

// The operands of the GEMM table's calls as the engine's layers find theirs: what the pass just
// computed (A, and C unless accumulated) stays in the cache; the rest (B; C of the weight gradient,
// accumulated in place) comes from memory, at rotating places in an arena four times a usual
// last-level cache.
class GemmOperands {
 public:
  explicit GemmOperands(std::int64_t largest)
      : arena_(std::max(kGemmArenaFloats, 4 * largest * largest), 0.25f),
        hot_a_(largest * largest, 0.5f),
        hot_c_(largest * largest, 0.0f) {}

  void Call(GemmPass pass, std::int64_t m64, std::int64_t n64, std::int64_t k64) {
    const int m = static_cast<int>(m64), n = static_cast<int>(n64), k = static_cast<int>(k64);
    const float* b = Cold(k64 * n64);
    switch (pass) {
      case GemmPass::kForward:  // y = x W^T: op(B) = W^T, W stored n x k
        Gemm(false, true, m, n, k, 1.0f, hot_a_.data(), k, b, k, 0.0f, hot_c_.data(), n);
        break;
      case GemmPass::kInputGrad:  // dx = dy W
        Gemm(false, false, m, n, k, 1.0f, hot_a_.data(), k, b, n, 0.0f, hot_c_.data(), n);
        break;
      case GemmPass::kWeightGrad:  // dW += dy^T x: op(A) = dy^T, dy stored k x m
        Gemm(true, false, m, n, k, 1.0f, hot_a_.data(), m, b, n, 1.0f, Cold(m64 * n64), n);
        break;
    }
  }

 private:
  float* Cold(std::int64_t floats) {
    if (next_ + floats > static_cast<std::int64_t>(arena_.size())) next_ = 0;
    float* at = arena_.data() + next_;
    next_ += (floats + 15) / 16 * 16;  // a cache line apart
    return at;
  }

  std::vector<float> arena_, hot_a_, hot_c_;
  std::int64_t next_ = 0;
};

// Seconds per call of one repeat of one shape and pass: calls that take kGemmRepeatSeconds at up
// to 100 GFLOP/s (one core's sgemm peaks near 95), every rank calling them between barriers.
double TimeGemmRepeat(GemmPass pass, std::int64_t m, std::int64_t n, std::int64_t k,
                      GemmOperands& operands, MPI_Comm comm) {
  const double flops = 2.0 * static_cast<double>(m * n * k);
  const int calls = static_cast<int>(std::max(1.0, std::ceil(kGemmRepeatSeconds * 1e11 / flops)));
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  for (int call = 0; call < calls; ++call) operands.Call(pass, m, n, k);
  return (MPI_Wtime() - start) / calls;
}

}  // namespace

std::vector<GemmTiming> MeasureGemmTable(const std::vector<std::int64_t>& sizes, int repeats,
                                         MPI_Comm comm) {
  const std::int64_t largest = sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end());
  GemmOperands operands(largest);
  std::vector<GemmTiming> out =
      TimeGemmTableInRounds(sizes, repeats, SizeOf(comm),
                            [&](GemmPass pass, std::int64_t m, std::int64_t n, std::int64_t k) {
                              return TimeGemmRepeat(pass, m, n, k, operands, comm);
                            });
  SleepyBarrier(comm);
  if (RankOf(comm) != 0) out.clear();
  return out;
}

double EstimateGemmTableSeconds(const std::vector<std::int64_t>& sizes, int repeats) {
  double per_repeat = 0;
  for (const std::int64_t m : sizes) {
    for (const std::int64_t n : sizes) {
      for (const std::int64_t k : sizes) {
        per_repeat += std::max(kGemmRepeatSeconds, 2.0 * static_cast<double>(m * n * k) / 8e10);
      }
    }
  }
  return kGemmPasses * (repeats + 1) * per_repeat;
}

double MeasureCopyBandwidth(int repeats, MPI_Comm comm) {
  double rate = 0;
  if (RankOf(comm) == 0) {
    constexpr std::size_t kBytes = std::size_t{64} << 20;
    std::vector<char> from(kBytes, 1), to(kBytes, 0);
    std::vector<double> times;
    for (int r = -1; r < repeats; ++r) {
      const double start = MPI_Wtime();
      std::memcpy(to.data(), from.data(), kBytes);
      if (r >= 0) times.push_back(MPI_Wtime() - start);
      from[static_cast<std::size_t>(r + 1) % kBytes] = to[kBytes - 1];  // the copy is used
    }
    rate = 2.0 * static_cast<double>(kBytes) / Median(times);
  }
  SleepyBarrier(comm);
  return rate;
}

namespace {

void AddPoints(Calibration& c, std::string_view what, int ranks,
               const std::vector<TimedSize>& timed) {
  for (const TimedSize& t : timed)
    c.points.push_back({std::string(what), ranks, t.bytes, t.seconds});
}

}  // namespace

Calibration MeasureCalibration(const CalibrationRequest& request, MPI_Comm comm) {
  int world = 0;
  MPI_Comm_size(comm, &world);
  const std::vector<std::int64_t> sizes = CalibrationSizes(request.max_bytes);
  Calibration c;
  c.engine = "cpu";
  c.ranks = world;
  c.cores = request.cores > 0 ? request.cores : UsableCores();
  c.version = Version();
  AddPoints(c, kCalibrationP2p, 2, MeasureP2p(sizes, request.repeats, comm));
  const std::vector<std::int64_t> reduced(sizes.begin() + 1, sizes.end());
  AddPoints(c, kCalibrationAllReduce, world, MeasureAllReduce(reduced, request.repeats, comm));
  c.instruction_overhead_s = MeasureInstructionOverhead(request.repeats, comm);
  c.gemm_flops_alone = MeasureGemmFlops(false, request.gemm_seconds, comm);
  c.gemm_flops = MeasureGemmFlops(true, request.gemm_seconds, comm);
  if (request.gemm_max > 0) {
    c.gemms = MeasureGemmTable(GemmTableSizes(request.gemm_max), request.gemm_repeats, comm);
  }
  c.memory_bandwidth = MeasureCopyBandwidth(request.repeats, comm);
  c.memory_bytes = MemTotalBytes();
  c.p2p = FitAlphaBeta(PointsOf(c, kCalibrationP2p));
  c.allreduce = FitAlphaBeta(PointsOf(c, kCalibrationAllReduce));
  return c;
}

}  // namespace pipette::cpu
