#include "cuda_rank_runtime.h"

#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>

#include "check.h"
#include "kernels.h"
#include "pipette/schedule/message.h"

namespace pipette::cuda {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// An NVTX range named like the instruction's trace event, for Nsight Systems.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace

CudaRankRuntime::CudaRankRuntime(const TrainPlan& plan, const TrainOptions& options,
                                 const RankPlace& place, RankDevice& dev, Fabric& fabric,
                                 StepCallback on_step)
    : plan_(plan),
      options_(options),
      place_(place),
      dev_(dev),
      fabric_(fabric),
      on_step_(std::move(on_step)),
      fault_(Fault::FromEnv()),
      io_(plan.program, place.pp_rank) {
  for (const int stage : plan.program.placement.StagesOf(place.pp_rank)) {
    DeviceChain& chain = chains_[stage];
    for (const std::string& layer : plan.piece_layers[plan.stage_piece[stage]]) {
      chain.Add(std::move(MakeDeviceModule(plan.spec, layer, options.seed, dev).value()));
    }
    for (auto& module : chain.modules()) {
      for (DeviceParam& p : module->params()) entries_[p.name].copies.push_back(&p);
    }
  }
  for (auto& [name, e] : entries_) {
    const DeviceTensor& value = e.copies.front()->value;
    e.m = dev_.Tensor(value.rows(), value.cols());
    e.v = dev_.Tensor(value.rows(), value.cols());
  }
  static_bytes_ = dev_.meter().live;
  stage_memory_.resize(plan.schedule.num_stages());
  PIPETTE_CUDA_CHECK(cudaEventCreate(&anchor_));
  marks_.resize(plan.program.ranks[place.pp_rank].instructions.size());
  PIPETTE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&loss_device_), sizeof(double)));
  PIPETTE_CUDA_CHECK(cudaMemset(loss_device_, 0, sizeof(double)));
}

CudaRankRuntime::~CudaRankRuntime() {
  ClearBatches();
  (void)cudaEventDestroy(anchor_);
  for (const Marks& m : marks_) {
    for (cudaEvent_t e : {m.begin, m.end}) {
      if (e != nullptr) (void)cudaEventDestroy(e);
    }
  }
  (void)cudaFree(loss_device_);
}

void CudaRankRuntime::ShareParameters() {
  std::vector<std::string> mine;
  for (const auto& [name, e] : entries_) mine.push_back(name);
  const std::vector<std::vector<std::string>> all = fabric_.GatherNames(mine);
  std::map<std::string, std::vector<int>> holders;
  for (std::size_t r = 0; r < all.size(); ++r) {
    for (const std::string& name : all[r]) holders[name].push_back(static_cast<int>(r));
  }
  for (const auto& [name, e] : entries_) {
    const std::vector<int>& ranks = holders.at(name);
    if (ranks.size() > 1) shared_[name] = ranks;
    if (ranks.front() == place_.pp_rank) owned_.insert(name);  // the first holder reports it
  }
}

RankContribution CudaRankRuntime::Contribution(RankLog log, bool replica0) const {
  RankContribution c;
  c.peak_bytes = static_cast<double>(dev_.meter().peak);
  c.static_bytes = static_cast<double>(static_bytes_);
  c.peak_rss_bytes = PeakRssBytes();
  c.device_compute_seconds = device_compute_seconds_;
  c.stage_memory = stage_memory_;
  if (!replica0) return c;
  for (const std::string& name : owned_) {
    c.owned_elements += entries_.at(name).copies.front()->value.size();
  }
  c.log = std::move(log);
  return c;
}

NamedTensors CudaRankRuntime::Snapshot(bool grads) {
  NamedTensors out;
  for (const std::string& name : owned_) {
    const DeviceParam& p = *entries_.at(name).copies.front();
    out[name] = dev_.Download(grads ? p.grad : p.value);
  }
  return out;
}

double CudaRankRuntime::Now() { return SteadySeconds() - t0_; }

void CudaRankRuntime::Mark(const Instruction& ins, bool begin) {
  const auto& instructions = plan_.program.ranks[place_.pp_rank].instructions;
  Marks& marks = marks_.at(static_cast<std::size_t>(&ins - instructions.data()));
  cudaEvent_t& event = begin ? marks.begin : marks.end;
  if (event == nullptr) PIPETTE_CUDA_CHECK(cudaEventCreate(&event));
  PIPETTE_CUDA_CHECK(cudaEventRecord(event, dev_.stream()));
}

double CudaRankRuntime::TimeOf(cudaEvent_t event) const {
  float ms = 0;
  PIPETTE_CUDA_CHECK(cudaEventElapsedTime(&ms, anchor_, event));
  return anchor_time_ + static_cast<double>(ms) * 1e-3;
}

// ---- the program's instructions ----

void CudaRankRuntime::Compute(const Instruction& ins) {
  fault_.AtCompute(place_.world_rank, step_);
  const NvtxRange range(ToString(ins.action));
  fabric_.Flush(dev_);  // the sends and receives before this compute go out now
  // The instruction's temporaries: its peak above what it holds before and after (the rank's
  // peak is restored afterwards). Overlapped cells mix two halves: only plain ones are measured.
  DeviceMeter& meter = dev_.meter();
  const std::int64_t before = meter.live, peak = meter.peak;
  meter.ResetPeak();
  Mark(ins, true);
  Run(ins.action);
  Mark(ins, false);
  if (ins.action.kind != ActionKind::kOverlapped) {
    StageMemory& memory = stage_memory_[ins.action.stage];
    memory.workspace_bytes =
        std::max(memory.workspace_bytes, meter.peak - std::max(before, meter.live));
  }
  meter.peak = std::max(peak, meter.peak);
}

void CudaRankRuntime::Run(const Action& a) {
  RunPasses(
      a, [this](const Action& f) { Forward(f); }, [this](const Action& i) { InputGrad(i); },
      [this](const Action& w) { WeightGrad(w); });
}

void CudaRankRuntime::Send(const Instruction& ins, std::int64_t) {
  Mark(ins, true);
  const Message message = MessageOf(ins.action);
  fabric_.Send(ins.peer, message.slot(plan_.m()), io_.TakeOutgoing(ins.action), dev_);
}

void CudaRankRuntime::PostRecv(const Instruction& ins, std::int64_t) {
  Mark(ins, true);
  const Message message = MessageOf(ins.action);
  DeviceTensor buffer = dev_.Uninitialized(plan_.tokens_per_microbatch(),
                                           DeviceOutputCols(plan_, message.shape_stage()));
  fabric_.PostRecv(ins.peer, message.slot(plan_.m()), std::move(buffer), dev_);
}

double CudaRankRuntime::WaitRecv(const Instruction& ins) {
  const Message message = MessageOf(ins.action);
  io_.Arrived(ins.action, fabric_.WaitRecv(ins.peer, message.slot(plan_.m()), dev_,
                                           fmt::format("{} from rank {} (step {})",
                                                       ToString(ins.action), ins.peer, step_ + 1)));
  Mark(ins, false);
  return Now();  // a dispatch time: TimeProgram sets the arrival
}

void CudaRankRuntime::TimeProgram(int, std::span<TraceEvent> events) {
  for (TraceEvent& e : events) {  // EndProgram waited for the stream: every event happened
    const Marks& marks = marks_.at(static_cast<std::size_t>(e.instr_id));
    switch (e.action.kind) {
      case ActionKind::kSendForward:
      case ActionKind::kSendBackward:
        e.start = e.end = TimeOf(marks.begin);
        break;
      case ActionKind::kRecvForward:
      case ActionKind::kRecvBackward:
        e.start = TimeOf(marks.begin);
        e.end = std::max(e.start, TimeOf(marks.end));
        break;
      default:
        e.start = TimeOf(marks.begin);
        e.end = TimeOf(marks.end);
        device_compute_seconds_ += e.end - e.start;
        break;
    }
  }
}

const DeviceBatch& CudaRankRuntime::BatchOf(int microbatch) {
  auto it = batches_.find(microbatch);
  if (it != batches_.end()) return it->second;
  host_batches_.push_back(
      std::make_unique<Batch>(MicrobatchOf(plan_, step_, place_.replica, microbatch)));
  const Batch& host = *host_batches_.back();
  DeviceBatch batch{&host, dev_.UploadInts(host.tokens), dev_.UploadInts(host.targets),
                    loss_device_};
  return batches_.emplace(microbatch, batch).first->second;
}

void CudaRankRuntime::ClearBatches() {
  for (auto& [mb, batch] : batches_) {
    dev_.Free(batch.tokens);
    dev_.Free(batch.targets);
  }
  batches_.clear();
  host_batches_.clear();
}

void CudaRankRuntime::Forward(const Action& a) {
  const DeviceBatch& batch = BatchOf(a.microbatch);
  // The last stage's loss module added the microbatch's loss into loss_device_ (read at EndStep).
  ForwardPass(a, plan_.program.routes[a.microbatch], chains_.at(a.stage), batch, io_,
              stage_memory_[a.stage]);
}

void CudaRankRuntime::InputGrad(const Action& a) {
  const DeviceBatch& batch = BatchOf(a.microbatch);
  InputGradPass(a, plan_.program.routes[a.microbatch], chains_.at(a.stage), batch, io_,
                stage_memory_[a.stage]);
}

void CudaRankRuntime::WeightGrad(const Action& a) {
  if (!fault_.SkipWeightGrad(place_.world_rank)) {
    chains_.at(a.stage).WeightGrad(BatchOf(a.microbatch), io_.CachesOf(a.stage, a.microbatch));
  }
  io_.Release(a.stage, a.microbatch);
}

// ---- the training step around the program ----

Status CudaRankRuntime::BeginStep(int step) {
  fabric_.Barrier(fmt::format("the other ranks to start step {}", step + 1));
  step_ = step;
  ClearBatches();
  // Every microbatch's tokens go up now, while the stream is idle: an upload from pageable memory
  // inside the program could wait for the stream.
  for (int mb = 0; mb < plan_.m(); ++mb) BatchOf(mb);
  PIPETTE_CUDA_CHECK(cudaMemsetAsync(loss_device_, 0, sizeof(double), dev_.stream()));
  PIPETTE_CUDA_CHECK(cudaEventRecord(anchor_, dev_.stream()));
  PIPETTE_CUDA_CHECK(cudaEventSynchronize(anchor_));
  anchor_time_ = Now();
  return Status::Ok();
}

void CudaRankRuntime::EndProgram(int) { fabric_.EndProgram(dev_); }

std::optional<Span> CudaRankRuntime::ReduceGradients(int) {
  for (auto& [name, e] : entries_) {  // copies on this rank (a tied head on the embedding's rank)
    for (std::size_t c = 1; c < e.copies.size(); ++c) {
      kernels::Axpy(1.0f, e.copies[c]->grad.data(), e.copies[c]->grad.size(),
                    e.copies[0]->grad.data(), dev_.stream());
    }
  }
  if (plan_.dp == 1) return std::nullopt;
  fabric_.Barrier("the other replicas to reach the all-reduce");
  const double start = Now();
  for (auto& [name, e] : entries_) {
    DeviceTensor& g = e.copies.front()->grad;
    fabric_.AllReduceReplicas(g.data(), g.size(), dev_);
  }
  dev_.Synchronize();
  return Span{start, Now()};
}

Status CudaRankRuntime::UpdateParameters(int step) {
  for (const auto& [name, ranks] : shared_) {  // after DP, so every copy ends bit-identical
    DeviceTensor& g = entries_.at(name).copies.front()->grad;
    fabric_.AllReduceAmong(ranks, name, g.data(), g.size(), dev_);
  }
  if (options_.verify && step == 0) first_grads_ = Snapshot(true);
  std::vector<kernels::AdamWTensor> tensors;
  for (auto& [name, e] : entries_) {
    DeviceParam& p = *e.copies.front();
    tensors.push_back(
        {p.value.data(), p.grad.data(), e.m.data(), e.v.data(), p.value.size(), p.decay});
  }
  kernels::AdamWStep(tensors, {.lr = options_.lr, .weight_decay = options_.weight_decay}, step + 1,
                     dev_.stream());
  for (auto& [name, e] : entries_) {
    DeviceParam& first = *e.copies.front();
    for (DeviceParam* copy : e.copies) {
      if (copy != &first) {
        PIPETTE_CUDA_CHECK(cudaMemcpyAsync(copy->value.data(), first.value.data(),
                                           static_cast<std::size_t>(first.value.bytes()),
                                           cudaMemcpyDeviceToDevice, dev_.stream()));
      }
      PIPETTE_CUDA_CHECK(cudaMemsetAsync(
          copy->grad.data(), 0, static_cast<std::size_t>(copy->grad.bytes()), dev_.stream()));
    }
  }
  dev_.RefreshBf16Shadows();  // the GEMMs' bf16 weights, once per step
  dev_.Synchronize();
  return Status::Ok();
}

void CudaRankRuntime::EndStep(int step, const Span& span) {
  double loss_sum = 0;  // the step's one read of the device's loss total
  PIPETTE_CUDA_CHECK(cudaMemcpyAsync(&loss_sum, loss_device_, sizeof(double),
                                     cudaMemcpyDeviceToHost, dev_.stream()));
  dev_.Synchronize();
  const StepTotals totals = fabric_.ReduceStep(loss_sum, span.start, span.end);
  if (place_.world_rank != 0) return;
  const double loss = totals.loss_sum / (static_cast<double>(plan_.m()) * plan_.dp);
  const double seconds = totals.latest_end - totals.earliest_start;
  losses_.push_back(loss);
  step_times_.push_back(seconds);
  if (on_step_) on_step_(step, loss, seconds);
}

}  // namespace pipette::cuda
