#include "trainer.h"

#include <fmt/format.h>
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unordered_map>

#include "corpus.h"
#include "param_set.h"
#include "pipette/engine/rank_runtime.h"
#include "watchdog.h"

namespace pipette::cpu {
namespace {

// ---- byte packing for gathers ------------------------------------------------------------------

void PutBytes(std::vector<char>& out, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  out.insert(out.end(), p, p + n);
}
template <typename T>
void Put(std::vector<char>& out, const T& value) {
  PutBytes(out, &value, sizeof(T));
}
void PutString(std::vector<char>& out, const std::string& s) {
  Put(out, static_cast<std::uint64_t>(s.size()));
  PutBytes(out, s.data(), s.size());
}

class Reader {
 public:
  Reader(const char* data, std::size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ >= end_; }
  template <typename T>
  T Get() {
    T value;
    std::memcpy(&value, p_, sizeof(T));
    p_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const auto n = Get<std::uint64_t>();
    std::string s(p_, p_ + n);
    p_ += n;
    return s;
  }
  void GetBytes(void* out, std::size_t n) {
    std::memcpy(out, p_, n);
    p_ += n;
  }

 private:
  const char* p_;
  const char* end_;
};

// Gathers every rank's bytes of `comm` on its rank 0 (empty elsewhere), one vector per rank.
// Status Internal when the total exceeds MPI's int counts (2 GiB).
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
  std::vector<int> counts(size), offsets(size);
  int at = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = static_cast<int>(sizes[r]);
    offsets[r] = at;
    at += counts[r];
  }
  std::vector<char> all(rank == 0 ? std::max(at, 1) : 1);
  MPI_Gatherv(mine.data(), static_cast<int>(n), MPI_CHAR, all.data(), counts.data(), offsets.data(),
              MPI_CHAR, 0, comm);
  std::vector<std::vector<char>> out;
  if (rank != 0) return out;
  for (int r = 0; r < size; ++r) {
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  }
  return out;
}

// Every rank's bytes on every rank.
std::vector<std::vector<char>> AllGatherBytes(const std::vector<char>& mine, MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(size), offsets(size);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  std::vector<char> all(std::max(total, 1));
  MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR,
                 comm);
  std::vector<std::vector<char>> out;
  for (int r = 0; r < size; ++r) {
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  }
  return out;
}

// ---- fault injection (tests)
// ---------------------------------------------------------------------

// PIPETTE_FAULT_RANK=r PIPETTE_FAULT=kill|hang|skip-w: at its first compute instruction, world
// rank r kills itself with SIGKILL, or stops making progress; or it skips the weight gradient of
// its first backward (a wrong result that --verify must catch).
struct Fault {
  int rank = -1;
  std::string kind;
  static Fault FromEnv() {
    Fault f;
    const char* rank = std::getenv("PIPETTE_FAULT_RANK");
    const char* kind = std::getenv("PIPETTE_FAULT");
    if (rank != nullptr && kind != nullptr) {
      f.rank = std::atoi(rank);
      f.kind = kind;
    }
    return f;
  }
  void MaybeTrigger(int world_rank) const {
    if (world_rank != rank) return;
    if (kind == "kill") std::raise(SIGKILL);
    if (kind == "hang") {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  bool SkipsWeightGrad(int world_rank) const { return world_rank == rank && kind == "skip-w"; }
};

// ---- the rank runtime
// ----------------------------------------------------------------------------

std::int64_t MessageTag(const TrainPlan& plan, int stage, int microbatch, bool gradient) {
  return (static_cast<std::int64_t>(stage) * plan.m() + microbatch) * 2 + (gradient ? 1 : 0);
}

// What one pipeline rank of one replica runs: its stages' modules, the microbatches in flight
// and the messages between ranks.
class CpuRankRuntime final : public RankRuntime {
 public:
  CpuRankRuntime(const TrainPlan& plan, const TrainOptions& options, int pp_rank, int replica,
                 int world_rank, MPI_Comm pp_comm, Watchdog& dog)
      : plan_(plan),
        pp_rank_(pp_rank),
        replica_(replica),
        world_rank_(world_rank),
        comm_(pp_comm),
        dog_(dog),
        fault_(Fault::FromEnv()) {
    for (const int stage : plan.program.placement.StagesOf(pp_rank)) {
      ModuleChain& chain = chains_[stage];
      for (const std::string& layer : plan.piece_layers[plan.stage_piece[stage]]) {
        chain.Add(std::move(MakeModule(plan.spec, layer, options.seed).value()));
      }
      params_.Add(chain);
    }
    params_.AllocateOptimizerState();
    stage_memory_.resize(plan.schedule.num_stages());
  }

  ParamSet& params() { return params_; }
  const std::vector<StageMemory>& stage_memory() const { return stage_memory_; }

  void BeginStep(int step, double t0) {
    step_ = step;
    t0_ = t0;
    batches_.clear();
    loss_sum_ = 0;
  }
  // Completes this step's sends.
  void EndStep() {
    std::vector<MPI_Request> requests;
    for (auto& [request, tensor] : sends_) requests.push_back(request);
    Watched(dog_, "this step's sends to complete", [&] {
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    });
    sends_.clear();
  }
  // Sum of the mean losses of the microbatches whose last stage ran here.
  double loss_sum() const { return loss_sum_; }

  double Now() override { return MPI_Wtime() - t0_; }

  void Compute(const Instruction& ins, double) override {
    if (!fault_checked_) {
      fault_checked_ = true;
      fault_.MaybeTrigger(world_rank_);
    }
    const Action& a = ins.action;
    switch (a.kind) {
      case ActionKind::kForward:
        Forward(a);
        break;
      case ActionKind::kInputBackward:
        InputGrad(a);
        break;
      case ActionKind::kWeightBackward:
        WeightGrad(a);
        break;
      case ActionKind::kFullBackward:
        InputGrad(a);
        WeightGrad(a);
        break;
      case ActionKind::kOverlapped: {  // F, then the backward half
        Forward(a.forward_half());
        const Action back = a.backward_half();
        InputGrad(back);
        if (back.kind == ActionKind::kFullBackward) WeightGrad(back);
        break;
      }
      default:
        break;
    }
  }

  void Send(const Instruction& ins, std::int64_t) override {
    const Action& a = ins.action;
    const bool gradient = a.kind == ActionKind::kSendBackward;
    auto it = outbox_.find(MessageKey(a.stage, a.microbatch, gradient));
    Tensor tensor = std::move(it->second);
    outbox_.erase(it);
    const int to_stage = gradient ? a.stage - 1 : a.stage + 1;
    MPI_Request request;
    MPI_Isend(tensor.data(), static_cast<int>(tensor.size()), MPI_FLOAT, ins.peer,
              Tag(to_stage, a.microbatch, gradient), comm_, &request);
    sends_.emplace_back(request, std::move(tensor));
  }

  void PostRecv(const Instruction& ins, std::int64_t) override {
    const Action& a = ins.action;
    const bool gradient = a.kind == ActionKind::kRecvBackward;
    // RECV_F(s): stage s-1's output; RECV_B(s): the gradient of stage s's output.
    const int cols = plan_.stage_output_cols[gradient ? a.stage : a.stage - 1];
    Pending& pending = recvs_[MessageKey(a.stage, a.microbatch, gradient)];
    pending.tensor = Tensor(plan_.tokens_per_microbatch(), cols);
    MPI_Irecv(pending.tensor.data(), static_cast<int>(pending.tensor.size()), MPI_FLOAT, ins.peer,
              Tag(a.stage, a.microbatch, gradient), comm_, &pending.request);
  }

  double WaitRecv(const Instruction& ins) override {
    const Action& a = ins.action;
    const bool gradient = a.kind == ActionKind::kRecvBackward;
    const std::int64_t key = MessageKey(a.stage, a.microbatch, gradient);
    auto it = recvs_.find(key);
    Watched(dog_, fmt::format("{} from rank {} (step {})", ToString(a), ins.peer, step_ + 1),
            [&] { MPI_Wait(&it->second.request, MPI_STATUS_IGNORE); });
    inbox_[key] = std::move(it->second.tensor);
    recvs_.erase(it);
    return Now();
  }

  // The tag of the message into `stage` for `microbatch`: unique within a step.
  int Tag(int stage, int microbatch, bool gradient) const {
    return static_cast<int>(MessageTag(plan_, stage, microbatch, gradient));
  }

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    Tensor tensor;
  };

  const Batch& BatchOf(int microbatch) {
    auto it = batches_.find(microbatch);
    if (it != batches_.end()) return it->second;
    const std::int64_t first = (static_cast<std::int64_t>(step_) * plan_.dp + replica_) *
                                   plan_.m() * plan_.micro_batch_size +
                               static_cast<std::int64_t>(microbatch) * plan_.micro_batch_size;
    return batches_.emplace(microbatch, StepBatch(plan_, first, plan_.micro_batch_size))
        .first->second;
  }

  Tensor Take(std::int64_t key) {
    auto it = inbox_.find(key);
    Tensor t = std::move(it->second);
    inbox_.erase(it);
    return t;
  }

  // Hands `out` to the stage that consumes it: locally or into the outbox for the next SEND.
  void Deliver(int consumer_stage, int producer_stage, int microbatch, bool gradient, Tensor out) {
    if (plan_.program.placement.rank_of(consumer_stage) == pp_rank_) {
      inbox_[MessageKey(consumer_stage, microbatch, gradient)] = std::move(out);
    } else {
      outbox_[MessageKey(producer_stage, microbatch, gradient)] = std::move(out);
    }
  }

  void Forward(const Action& a) {
    const StageRange& route = plan_.program.routes[a.microbatch];
    const Batch& batch = BatchOf(a.microbatch);
    Tensor x = a.stage == route.first ? Tensor() : Take(MessageKey(a.stage, a.microbatch, false));
    std::vector<Cache>& caches = caches_[MessageKey(a.stage, a.microbatch, false)];
    Tensor y = chains_.at(a.stage).Forward(batch, std::move(x), caches);
    StageMemory& memory = stage_memory_[a.stage];
    memory.activation_bytes = std::max(memory.activation_bytes, ModuleChain::CacheBytes(caches));
    if (a.stage == route.last) {
      loss_sum_ += caches.back().loss;
    } else {
      Deliver(a.stage + 1, a.stage, a.microbatch, false, std::move(y));
    }
  }

  void InputGrad(const Action& a) {
    const StageRange& route = plan_.program.routes[a.microbatch];
    const Batch& batch = BatchOf(a.microbatch);
    Tensor dy = a.stage == route.last ? Tensor() : Take(MessageKey(a.stage, a.microbatch, true));
    std::vector<Cache>& caches = caches_.at(MessageKey(a.stage, a.microbatch, false));
    Tensor dx = chains_.at(a.stage).InputGrad(batch, std::move(dy), caches);
    StageMemory& memory = stage_memory_[a.stage];
    memory.wgrad_input_bytes = std::max(memory.wgrad_input_bytes, ModuleChain::CacheBytes(caches));
    if (a.stage > route.first) Deliver(a.stage - 1, a.stage, a.microbatch, true, std::move(dx));
  }

  void WeightGrad(const Action& a) {
    auto it = caches_.find(MessageKey(a.stage, a.microbatch, false));
    if (fault_.SkipsWeightGrad(world_rank_) && !skipped_) {
      skipped_ = true;
    } else {
      chains_.at(a.stage).WeightGrad(BatchOf(a.microbatch), it->second);
    }
    caches_.erase(it);
  }

  const TrainPlan& plan_;
  int pp_rank_, replica_, world_rank_;
  MPI_Comm comm_;
  Watchdog& dog_;
  Fault fault_;
  bool fault_checked_ = false;
  bool skipped_ = false;
  std::map<int, ModuleChain> chains_;  // by global stage
  ParamSet params_;
  std::vector<StageMemory> stage_memory_;

  int step_ = 0;
  double t0_ = 0;
  double loss_sum_ = 0;
  std::unordered_map<int, Batch> batches_;
  std::unordered_map<std::int64_t, std::vector<Cache>> caches_;  // (stage, mb) of each forward
  std::unordered_map<std::int64_t, Tensor> inbox_;   // inputs of computes, by consumer (stage, mb)
  std::unordered_map<std::int64_t, Tensor> outbox_;  // outputs awaiting SEND, by producer
  std::unordered_map<std::int64_t, Pending> recvs_;
  std::vector<std::pair<MPI_Request, Tensor>> sends_;
};

// ---- gradient reductions
// ---------------------------------------------------------------------------

// Packs copies[0].grad of `names` (all when empty) into one buffer, runs `reduce` on it, unpacks.
template <typename F>
void ReduceGrads(ParamSet& params, const std::vector<std::string>& names, F&& reduce) {
  std::vector<Param*> order;
  if (names.empty()) {
    for (auto& [name, e] : params.entries()) order.push_back(e.copies.front());
  } else {
    for (const std::string& name : names) order.push_back(params.entries().at(name).copies.front());
  }
  std::size_t total = 0;
  for (const Param* p : order) total += p->grad.size();
  std::vector<float> buffer(total);
  std::size_t at = 0;
  for (const Param* p : order) {
    std::copy(p->grad.data(), p->grad.data() + p->grad.size(), buffer.data() + at);
    at += p->grad.size();
  }
  reduce(buffer);
  at = 0;
  for (Param* p : order) {
    std::copy(buffer.data() + at, buffer.data() + at + p->grad.size(), p->grad.data());
    at += p->grad.size();
  }
}

// Parameters held by several pipeline ranks, grouped by the set of ranks holding them, with one
// communicator per set this rank belongs to.
struct SharedGroup {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<std::string> names;
};

std::vector<SharedGroup> MakeSharedGroups(ParamSet& params, MPI_Comm pp_comm, int pp_rank) {
  std::vector<char> mine;
  for (const auto& [name, e] : params.entries()) PutString(mine, name);
  const std::vector<std::vector<char>> all = AllGatherBytes(mine, pp_comm);
  std::map<std::string, std::vector<int>> holders;
  for (std::size_t r = 0; r < all.size(); ++r) {
    Reader reader(all[r].data(), all[r].size());
    while (!reader.done()) holders[reader.GetString()].push_back(static_cast<int>(r));
  }
  std::map<std::vector<int>, std::vector<std::string>> sets;
  for (const auto& [name, ranks] : holders) {
    if (ranks.size() > 1) sets[ranks].push_back(name);
  }
  std::vector<SharedGroup> groups;
  for (const auto& [ranks, names] : sets) {  // same order on every rank: split is collective
    const bool member = std::find(ranks.begin(), ranks.end(), pp_rank) != ranks.end();
    MPI_Comm comm;
    MPI_Comm_split(pp_comm, member ? 0 : MPI_UNDEFINED, pp_rank, &comm);
    if (member) groups.push_back({comm, names});
  }
  return groups;
}

// The lowest pipeline rank holding each of this rank's parameters owns it for reporting.
std::set<std::string> OwnedNames(ParamSet& params, MPI_Comm pp_comm, int pp_rank) {
  std::vector<char> mine;
  for (const auto& [name, e] : params.entries()) PutString(mine, name);
  const std::vector<std::vector<char>> all = AllGatherBytes(mine, pp_comm);
  std::map<std::string, int> owner;
  for (std::size_t r = 0; r < all.size(); ++r) {
    Reader reader(all[r].data(), all[r].size());
    while (!reader.done()) owner.emplace(reader.GetString(), static_cast<int>(r));
  }
  std::set<std::string> owned;
  for (const auto& [name, r] : owner) {
    if (r == pp_rank) owned.insert(name);
  }
  return owned;
}

// Gathers the owned tensors (gradients or values) of replica 0 on world rank 0.
Result<NamedTensors> GatherTensors(ParamSet& params, const std::set<std::string>& owned, bool grads,
                                   bool send) {
  std::vector<char> mine;
  if (send) {
    for (const auto& [name, e] : params.entries()) {
      if (!owned.contains(name)) continue;
      const Tensor& t = grads ? e.copies.front()->grad : e.copies.front()->value;
      PutString(mine, name);
      Put(mine, static_cast<std::uint64_t>(t.size()));
      PutBytes(mine, t.data(), static_cast<std::size_t>(t.bytes()));
    }
  }
  NamedTensors out;
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<std::vector<char>> gathered,
                           GatherBytes(mine, MPI_COMM_WORLD));
  for (const std::vector<char>& bytes : gathered) {
    Reader reader(bytes.data(), bytes.size());
    while (!reader.done()) {
      std::vector<float>& values = out[reader.GetString()];
      values.resize(reader.Get<std::uint64_t>());
      reader.GetBytes(values.data(), values.size() * sizeof(float));
    }
  }
  return out;
}

double PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

}  // namespace

bool LaunchedByMpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

Status AgreeOnConfiguration(const Status& local, const std::string& config_json) {
  std::vector<char> mine;
  Put(mine, static_cast<std::uint8_t>(local.ok() ? 1 : 0));
  PutString(mine, local.ok() ? config_json : local.message());
  const std::vector<std::vector<char>> all = AllGatherBytes(mine, MPI_COMM_WORLD);
  std::vector<std::string> configs;
  for (std::size_t r = 0; r < all.size(); ++r) {
    Reader reader(all[r].data(), all[r].size());
    const bool ok = reader.Get<std::uint8_t>() != 0;
    std::string text = reader.GetString();
    if (!ok) {
      return Status::InvalidArgument(
          r == 0 ? text : fmt::format("rank {} of {}: {}", r, all.size(), text));
    }
    configs.push_back(std::move(text));
  }
  const nlohmann::json first = nlohmann::json::parse(configs[0]);
  for (std::size_t r = 1; r < configs.size(); ++r) {
    if (configs[r] == configs[0]) continue;
    const nlohmann::json other = nlohmann::json::parse(configs[r]);
    for (const auto& [key, value] : first.items()) {
      if (!other.contains(key) || other[key] != value) {
        return Status::InvalidArgument(fmt::format(
            "rank {} was started with {} = {} but rank 0 with {} = {}; every rank of a run must "
            "get the same options",
            r, key, other.contains(key) ? other[key].dump() : "(none)", key, value.dump()));
      }
    }
    return Status::InvalidArgument(
        fmt::format("rank {} was started with other options than rank 0", r));
  }
  return Status::Ok();
}

Result<TrainReport> TrainOnMpi(const TrainPlan& plan, const TrainOptions& options, Watchdog& dog,
                               const StepCallback& on_step) {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_size != plan.world_size()) {
    return Status::InvalidArgument(fmt::format(
        "-p {} --dp {} needs {} ranks but mpirun started {}; launch it with mpirun -np {}",
        plan.p(), plan.dp, plan.world_size(), world_size, plan.world_size()));
  }
  {  // every (stage, microbatch, direction) needs its own tag
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    const std::int64_t needed =
        MessageTag(plan, plan.schedule.num_stages() - 1, plan.m() - 1, true);
    if (found && needed > *tag_ub) {
      return Status::InvalidArgument(
          fmt::format("-m {} with {} stages needs message tags up to {}, above this MPI's limit {}",
                      plan.m(), plan.schedule.num_stages(), needed, *tag_ub));
    }
  }
  const int p = plan.p();
  const int pp_rank = world_rank % p;
  const int replica = world_rank / p;
  MPI_Comm pp_comm, dp_comm;
  MPI_Comm_split(MPI_COMM_WORLD, replica, pp_rank, &pp_comm);
  MPI_Comm_split(MPI_COMM_WORLD, pp_rank, replica, &dp_comm);

  ResetPeakTensorBytes();
  const std::int64_t bytes_before = LiveTensorBytes();
  CpuRankRuntime runtime(plan, options, pp_rank, replica, world_rank, pp_comm, dog);
  ParamSet& params = runtime.params();
  const double static_bytes = static_cast<double>(LiveTensorBytes() - bytes_before);
  std::vector<SharedGroup> shared;
  std::set<std::string> owned;
  Watched(dog, "the other ranks to set up", [&] {
    shared = MakeSharedGroups(params, pp_comm, pp_rank);
    owned = OwnedNames(params, pp_comm, pp_rank);
  });

  MessageSizes sizes;
  for (const int cols : plan.stage_output_cols) {
    sizes.stage_output_bytes.push_back(static_cast<std::int64_t>(plan.tokens_per_microbatch()) *
                                       cols * static_cast<std::int64_t>(sizeof(float)));
  }
  const Costs no_costs = Costs::Uniform(plan.schedule.num_stages(), {0, 0, 0});
  const AdamWConfig adam{.lr = options.lr, .weight_decay = options.weight_decay};
  std::int64_t grad_bytes = 0;
  for (const auto& [name, e] : params.entries()) grad_bytes += e.copies.front()->grad.bytes();

  TrainReport report;
  std::vector<TraceEvent> trace, scratch;
  std::vector<AllReduceEvent> allreduces;
  NamedTensors first_grads;
  Watched(dog, "the other ranks to start", [&] { MPI_Barrier(MPI_COMM_WORLD); });
  const double t0 = MPI_Wtime();
  for (int step = 0; step < options.steps; ++step) {
    Watched(dog, fmt::format("the other ranks to start step {}", step + 1),
            [&] { MPI_Barrier(MPI_COMM_WORLD); });
    runtime.BeginStep(step, t0);
    const double start = runtime.Now();
    // Replica 0 keeps the events of the first options.trace_steps steps; other steps are traced
    // into a scratch list (RunRank needs one) and dropped.
    const bool keep = replica == 0 && step < options.trace_steps;
    std::vector<TraceEvent>& events = keep ? trace : scratch;
    scratch.clear();
    const std::size_t first_event = events.size();
    RunRank(plan.program, pp_rank, no_costs, sizes, runtime, events);
    for (std::size_t k = first_event; k < events.size(); ++k) events[k].step = step;
    runtime.EndStep();

    params.SumLocalCopies();
    AllReduceEvent reduce{pp_rank, step, runtime.Now(), 0, grad_bytes};
    if (plan.dp > 1) {
      Watched(dog, "the data-parallel gradient all-reduce", [&] {
        ReduceGrads(params, {}, [&](std::vector<float>& buffer) {
          MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT,
                        MPI_SUM, dp_comm);
        });
      });
    }
    reduce.end = runtime.Now();
    if (plan.dp > 1 && keep) allreduces.push_back(reduce);
    for (const SharedGroup& group : shared) {  // after DP, so every copy ends bit-identical
      Watched(dog, "the gradient sum over copies of shared parameters", [&] {
        ReduceGrads(params, group.names, [&](std::vector<float>& buffer) {
          MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT,
                        MPI_SUM, group.comm);
        });
      });
    }
    if (options.verify && step == 0) {
      Result<NamedTensors> grads = NamedTensors();
      Watched(dog, "the gradient gather",
              [&] { grads = GatherTensors(params, owned, true, replica == 0); });
      PIPETTE_RETURN_IF_ERROR(grads.status());  // the same answer on every rank
      first_grads = std::move(*grads);
    }
    params.Step(adam, step + 1);
    const double end = runtime.Now();

    double sums[2] = {runtime.loss_sum(), -start}, totals[2] = {0, 0};
    double end_max = 0;
    Watched(dog, "the loss reduction", [&] {
      MPI_Reduce(&sums[0], &totals[0], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      MPI_Reduce(&sums[1], &totals[1], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      MPI_Reduce(&end, &end_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    });
    if (world_rank == 0) {
      const double loss = totals[0] / (static_cast<double>(plan.m()) * plan.dp);
      const double seconds = end_max + totals[1];  // latest end - earliest start
      report.losses.push_back(loss);
      report.step_times.push_back(seconds);
      if (on_step) on_step(step, loss, seconds);
    }
  }

  // Gather the trace and the measurements on rank 0.
  NamedTensors final_params;
  std::vector<char> mine;
  Put(mine, static_cast<double>(PeakTensorBytes() - bytes_before));
  Put(mine, static_bytes);
  Put(mine, PeakRssBytes());
  std::int64_t owned_elements = 0;
  for (const std::string& name : owned) {
    owned_elements +=
        static_cast<std::int64_t>(params.entries().at(name).copies.front()->value.size());
  }
  Put(mine, replica == 0 ? owned_elements : std::int64_t{0});
  for (const StageMemory& m : runtime.stage_memory()) {
    Put(mine, m.activation_bytes);
    Put(mine, m.wgrad_input_bytes);
  }
  const bool sends_trace = replica == 0;
  Put(mine, static_cast<std::uint64_t>(sends_trace ? trace.size() : 0));
  if (sends_trace) PutBytes(mine, trace.data(), trace.size() * sizeof(TraceEvent));
  Put(mine, static_cast<std::uint64_t>(sends_trace ? allreduces.size() : 0));
  if (sends_trace) PutBytes(mine, allreduces.data(), allreduces.size() * sizeof(AllReduceEvent));
  Result<std::vector<std::vector<char>>> gathered = std::vector<std::vector<char>>();
  Result<NamedTensors> gathered_params = NamedTensors();
  Watched(dog, "the trace gather", [&] {
    gathered = GatherBytes(mine, MPI_COMM_WORLD);
    if (options.verify) gathered_params = GatherTensors(params, owned, false, replica == 0);
  });
  MPI_Comm_free(&pp_comm);
  MPI_Comm_free(&dp_comm);
  for (SharedGroup& group : shared) MPI_Comm_free(&group.comm);
  PIPETTE_RETURN_IF_ERROR(gathered.status());
  PIPETTE_RETURN_IF_ERROR(gathered_params.status());
  if (world_rank != 0) return report;
  final_params = std::move(*gathered_params);

  report.peak_memory_bytes.assign(p, 0);
  report.static_bytes.assign(p, 0);
  report.peak_rss_bytes.assign(p, 0);
  report.stage_memory.assign(plan.schedule.num_stages(), StageMemory{});
  for (int r = 0; r < world_size; ++r) {
    Reader reader((*gathered)[r].data(), (*gathered)[r].size());
    const int rank = r % p;
    report.peak_memory_bytes[rank] = std::max(report.peak_memory_bytes[rank], reader.Get<double>());
    report.static_bytes[rank] = std::max(report.static_bytes[rank], reader.Get<double>());
    report.peak_rss_bytes[rank] = std::max(report.peak_rss_bytes[rank], reader.Get<double>());
    report.params += reader.Get<std::int64_t>();
    for (StageMemory& m : report.stage_memory) {
      m.activation_bytes = std::max(m.activation_bytes, reader.Get<std::int64_t>());
      m.wgrad_input_bytes = std::max(m.wgrad_input_bytes, reader.Get<std::int64_t>());
    }
    const auto events = reader.Get<std::uint64_t>();
    const std::size_t at = report.trace.size();
    report.trace.resize(at + events);
    reader.GetBytes(report.trace.data() + at, events * sizeof(TraceEvent));
    const auto reduces = reader.Get<std::uint64_t>();
    const std::size_t at2 = report.allreduces.size();
    report.allreduces.resize(at2 + reduces);
    reader.GetBytes(report.allreduces.data() + at2, reduces * sizeof(AllReduceEvent));
  }
  double total_time = 0;
  for (const double t : report.step_times) total_time += t;
  report.tokens_per_s =
      static_cast<double>(plan.sequences_per_step()) * plan.seq_len * options.steps / total_time;
  if (options.verify) {
    const ReferenceRun reference = TrainReference(plan, options);
    Verification v;
    PIPETTE_ASSIGN_OR_RETURN(v.gradients, Compare(first_grads, reference.first_grads));
    PIPETTE_ASSIGN_OR_RETURN(v.parameters, Compare(final_params, reference.final_params));
    for (std::size_t s = 0; s < reference.losses.size(); ++s) {
      v.max_loss_difference =
          std::max(v.max_loss_difference, std::abs(report.losses[s] - reference.losses[s]));
    }
    report.verification = v;
  }
  return report;
}

}  // namespace pipette::cpu
