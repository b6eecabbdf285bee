#include "device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "check.h"
#include "kernels.h"

namespace pipette::cuda {
namespace {

constexpr std::int64_t kWorkspaceBytes = 32LL << 20;  // cuBLASLt's recommendation for Hopper

// A cuBLASLt matrix layout of `rows` x `cols` column-major with leading dimension `ld`.
struct Layout {
  cublasLtMatrixLayout_t handle = nullptr;
  Layout(cudaDataType_t type, int rows, int cols, int ld) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&handle, type, rows, cols, ld));
  }
  ~Layout() { cublasLtMatrixLayoutDestroy(handle); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};

struct MatmulDesc {
  cublasLtMatmulDesc_t handle = nullptr;
  MatmulDesc(bool trans_a, bool trans_b) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&handle, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    PIPETTE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PIPETTE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  }
  ~MatmulDesc() { cublasLtMatmulDescDestroy(handle); }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;

  void SetEpilogue(GemmEpilogue epilogue) {
    const cublasLtEpilogue_t e = LtEpilogue(epilogue);
    PIPETTE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
  }
  // The bias vector's type is left at its default, D's (fp32), which our bias is.
  void SetBias(const float* bias) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(handle, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &bias, sizeof bias));
  }
};

struct Preference {
  cublasLtMatmulPreference_t handle = nullptr;
  Preference(std::size_t workspace, std::uint32_t alignment) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&handle));
    Set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
    for (const cublasLtMatmulPreferenceAttributes_t a :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      Set(a, &alignment, sizeof alignment);
    }
  }
  ~Preference() { cublasLtMatmulPreferenceDestroy(handle); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  void Set(cublasLtMatmulPreferenceAttributes_t attribute, const void* value, std::size_t size) {
    PIPETTE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(handle, attribute, value, size));
  }
};

// The most algorithms a plan asks the heuristic for (the candidates autotuning times).
constexpr int kMaxCandidates = 32;

// Elements a column-major operand spans in memory: all columns but the last whole, the last to
// its rows.
std::int64_t Span(int rows, int cols, int ld) {
  return static_cast<std::int64_t>(cols - 1) * ld + rows;
}

}  // namespace

// ---- GEMM plans
// -----------------------------------------------------------------------------------

// One cached GEMM: the descriptor (transposes, epilogue), the four layouts and the algorithms the
// heuristic offered, `chosen` the one every call runs.
struct GemmPlan {
  MatmulDesc desc;
  Layout a, b, c, d;
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  int chosen = 0;
  bool bias_kernel = false;  // the heuristic had nothing with the bias epilogue: AddBias after

  GemmPlan(const GemmPlanKey& key, const ColumnMajorGemm& g, int c_ld)
      : desc(g.first_op_t, g.second_op_t),
        a(InType(key), g.first_rows, g.first_cols, g.first_ld),
        b(InType(key), g.second_rows, g.second_cols, g.second_ld),
        c(CUDA_R_32F, g.c_rows, g.c_cols, c_ld),
        d(CUDA_R_32F, g.c_rows, g.c_cols, g.c_ld) {}
  static cudaDataType_t InType(const GemmPlanKey& key) {
    return key.precision == GemmPrecision::kBf16 ? CUDA_R_16BF : CUDA_R_32F;
  }
  const cublasLtMatmulAlgo_t& algo() const { return candidates[chosen].algo; }
};

// A tensor's values rounded to bf16, in memory of the tensor's rank, listed by the RankDevice
// that made it until it is freed (with its tensor).
struct Bf16ShadowBuffer {
  __nv_bfloat16* data = nullptr;
  const float* source = nullptr;  // the tensor's fp32 values
  std::int64_t n = 0;
  cudaStream_t stream = nullptr;
  DeviceMeter* meter = nullptr;
  RankDevice* owner = nullptr;
  ~Bf16ShadowBuffer() {
    if (owner != nullptr) {
      std::vector<Bf16ShadowBuffer*>& list = owner->shadows_;
      list.erase(std::remove(list.begin(), list.end(), this), list.end());
    }
    (void)cudaFreeAsync(data, stream);  // a destructor does not throw; a failed free leaks
    if (meter != nullptr) meter->live -= n * 2;
  }
};

// ---- DeviceTensor
// ---------------------------------------------------------------------------------

DeviceTensor::DeviceTensor(int rows, int cols, cudaStream_t stream, DeviceMeter* meter, bool zero)
    : rows_(rows), cols_(cols), stream_(stream), meter_(meter) {
  if (bytes() == 0) return;
  void* p = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&p, static_cast<std::size_t>(bytes()), stream_));
  if (zero) PIPETTE_CUDA_CHECK(cudaMemsetAsync(p, 0, static_cast<std::size_t>(bytes()), stream_));
  data_ = static_cast<float*>(p);
  if (meter_ != nullptr) meter_->Add(bytes());
}

DeviceTensor::DeviceTensor() = default;

DeviceTensor::~DeviceTensor() { Release(); }

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : shadow_(std::move(other.shadow_)),
      rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      stream_(other.stream_),
      meter_(other.meter_) {}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    Release();
    shadow_ = std::move(other.shadow_);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    data_ = std::exchange(other.data_, nullptr);
    stream_ = other.stream_;
    meter_ = other.meter_;
  }
  return *this;
}

void DeviceTensor::set_stream(cudaStream_t stream) {
  stream_ = stream;
  if (shadow_ != nullptr) shadow_->stream = stream;
}

void DeviceTensor::set_meter(DeviceMeter* meter) {
  const std::int64_t held = bytes() + (shadow_ != nullptr ? shadow_->n * 2 : 0);
  if (meter_ != nullptr) meter_->live -= held;
  meter_ = meter;
  if (shadow_ != nullptr) shadow_->meter = meter;
  if (meter_ != nullptr) meter_->Add(held);
}

const __nv_bfloat16* DeviceTensor::bf16_shadow() const {
  return shadow_ != nullptr ? shadow_->data : nullptr;
}

void DeviceTensor::Release() {
  shadow_.reset();
  if (data_ == nullptr) return;
  (void)cudaFreeAsync(data_, stream_);  // a destructor does not throw; a failed free leaks
  if (meter_ != nullptr) meter_->live -= bytes();
  data_ = nullptr;
  rows_ = cols_ = 0;
}

// ---- RankDevice
// -----------------------------------------------------------------------------------

RankDevice::RankDevice(GemmPrecision precision, bool autotune)
    : precision_(precision), autotune_(autotune) {
  // The stream-ordered pool keeps what it has: with its default release threshold (0) every
  // synchronisation (one per step) would return its memory to the OS and the next step would map
  // it again, inside the timed instructions. And it reuses memory freed on another stream only
  // where the program already orders the two: by default it may also make an allocation wait for
  // another stream's free (another virtual rank's, the communication stream's), a dependency the
  // program does not have that would couple the ranks' timings.
  int device = 0;
  cudaMemPool_t pool = nullptr;
  PIPETTE_CUDA_CHECK(cudaGetDevice(&device));
  PIPETTE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep = UINT64_MAX;
  PIPETTE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  int off = 0;
  PIPETTE_CUDA_CHECK(
      cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &off));
  PIPETTE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &off));
  PIPETTE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PIPETTE_CUBLAS_CHECK(cublasLtCreate(&lt_));
  workspace_bytes_ = kWorkspaceBytes;
  PIPETTE_CUDA_CHECK(
      cudaMallocAsync(&workspace_, static_cast<std::size_t>(workspace_bytes_), stream_));
  meter_.Add(workspace_bytes_);
}

RankDevice::~RankDevice() {
  for (Bf16ShadowBuffer* shadow : shadows_)
    shadow->owner = nullptr;  // tensors outliving their rank
  plans_.clear();
  // Only what was allocated: cudaFreeAsync(nullptr) may return cudaErrorInvalidValue, which would
  // stay this thread's last error and fail the next launch check (cudaGetLastError).
  for (void* p : bf16_) {
    if (p != nullptr) (void)cudaFreeAsync(p, stream_);
  }
  if (workspace_ != nullptr) (void)cudaFreeAsync(workspace_, stream_);
  (void)cudaStreamSynchronize(stream_);
  (void)cublasLtDestroy(lt_);
  (void)cudaStreamDestroy(stream_);
}

DeviceTensor RankDevice::Clone(const DeviceTensor& t) {
  DeviceTensor copy = Uninitialized(t.rows(), t.cols());
  if (!t.empty()) {
    PIPETTE_CUDA_CHECK(cudaMemcpyAsync(copy.data(), t.data(), static_cast<std::size_t>(t.bytes()),
                                       cudaMemcpyDeviceToDevice, stream_));
  }
  return copy;
}

DeviceTensor RankDevice::Upload(const float* host, int rows, int cols) {
  DeviceTensor t = Uninitialized(rows, cols);
  Upload(host, t);
  return t;
}

void RankDevice::Upload(const float* host, DeviceTensor& t) {
  if (t.empty()) return;
  PIPETTE_CUDA_CHECK(cudaMemcpyAsync(t.data(), host, static_cast<std::size_t>(t.bytes()),
                                     cudaMemcpyHostToDevice, stream_));
  Synchronize();  // the host buffer may go away after the call
}

std::vector<float> RankDevice::Download(const DeviceTensor& t) {
  std::vector<float> host(static_cast<std::size_t>(t.size()));
  if (!t.empty()) {
    PIPETTE_CUDA_CHECK(cudaMemcpyAsync(host.data(), t.data(), static_cast<std::size_t>(t.bytes()),
                                       cudaMemcpyDeviceToHost, stream_));
  }
  Synchronize();
  return host;
}

std::int32_t* RankDevice::UploadInts(const std::vector<std::int32_t>& values) {
  void* p = nullptr;
  const std::size_t bytes = std::max<std::size_t>(1, values.size()) * sizeof(std::int32_t);
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream_));
  if (!values.empty()) {
    PIPETTE_CUDA_CHECK(cudaMemcpyAsync(p, values.data(), values.size() * sizeof(std::int32_t),
                                       cudaMemcpyHostToDevice, stream_));
  }
  Synchronize();
  return static_cast<std::int32_t*>(p);
}

void RankDevice::Free(void* device_pointer) {
  if (device_pointer != nullptr) PIPETTE_CUDA_CHECK(cudaFreeAsync(device_pointer, stream_));
}

void RankDevice::Synchronize() { PIPETTE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

const void* RankDevice::AsBf16(const float* x, std::int64_t n, int slot) {
  if (bf16_elements_[slot] < n) {  // grown in stream order; counted as the rank's memory
    if (bf16_[slot] != nullptr) PIPETTE_CUDA_CHECK(cudaFreeAsync(bf16_[slot], stream_));
    meter_.live -= bf16_elements_[slot] * 2;
    PIPETTE_CUDA_CHECK(cudaMallocAsync(&bf16_[slot], static_cast<std::size_t>(n) * 2, stream_));
    bf16_elements_[slot] = n;
    meter_.Add(n * 2);
  }
  kernels::CastToBf16(x, n, static_cast<__nv_bfloat16*>(bf16_[slot]), stream_);
  ++operand_roundings_;
  return bf16_[slot];
}

ColumnMajorGemm AsColumnMajor(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb,
                              int ldc) {
  ColumnMajorGemm g;
  g.m = n;
  g.n = m;
  g.k = k;
  // B (row-major, k x n, or n x k when transposed) read column-major is B^T (or B): op N gives
  // op(B)^T when B is not transposed, op T when it is.
  g.first_op_t = trans_b;
  g.first_rows = trans_b ? k : n;
  g.first_cols = trans_b ? n : k;
  g.first_ld = ldb;
  g.second_op_t = trans_a;
  g.second_rows = trans_a ? m : k;
  g.second_cols = trans_a ? k : m;
  g.second_ld = lda;
  g.c_rows = n;
  g.c_cols = m;
  g.c_ld = ldc;
  return g;
}

bool GemmPlanKey::operator==(const GemmPlanKey& o) const { return !(*this < o) && !(o < *this); }

bool GemmPlanKey::operator<(const GemmPlanKey& o) const {
  auto tie = [](const GemmPlanKey& x) {
    return std::make_tuple(x.trans_a, x.trans_b, x.m, x.n, x.k, x.lda, x.ldb, x.ldc, x.ldd,
                           static_cast<int>(x.precision), static_cast<int>(x.epilogue), x.beta_zero,
                           x.c_is_d, x.alignment, x.bias_alignment);
  };
  return tie(*this) < tie(o);
}

std::uint32_t PointerAlignment(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

namespace {

// Whether the GEMM writes D over C (C is not read when beta is 0).
bool CIsD(const GemmArgs& args) {
  return args.beta == 0.0f || args.c == nullptr || args.c == args.d;
}

// The pointer cuBLASLt reads for an operand: the fp32 values, or at bf16 precision the shadow,
// or a scratch buffer of this rank's (nullptr here: aligned to 256 like every allocation).
const void* ReadPointer(const GemmOperand& op, GemmPrecision precision) {
  if (precision == GemmPrecision::kFp32) return op.f32;
  return op.bf16;
}

}  // namespace

GemmPlanKey MakeGemmPlanKey(const GemmArgs& args, GemmPrecision precision) {
  GemmPlanKey key;
  key.trans_a = args.trans_a;
  key.trans_b = args.trans_b;
  key.m = args.m;
  key.n = args.n;
  key.k = args.k;
  key.lda = args.lda;
  key.ldb = args.ldb;
  key.c_is_d = CIsD(args);
  key.ldd = args.ldd;
  key.ldc = key.c_is_d ? args.ldd : args.ldc;
  key.precision = precision;
  key.epilogue = args.bias != nullptr ? GemmEpilogue::kBias : GemmEpilogue::kNone;
  key.beta_zero = args.beta == 0.0f;
  key.alignment =
      std::min({PointerAlignment(ReadPointer(args.a, precision)),
                PointerAlignment(ReadPointer(args.b, precision)),
                PointerAlignment(key.c_is_d ? args.d : args.c), PointerAlignment(args.d)});
  key.bias_alignment = PointerAlignment(args.bias);
  return key;
}

ColumnMajorGemm AsColumnMajor(const GemmArgs& args, int* c_ld_out) {
  *c_ld_out = CIsD(args) ? args.ldd : args.ldc;
  return AsColumnMajor(args.trans_a, args.trans_b, args.m, args.n, args.k, args.lda, args.ldb,
                       args.ldd);
}

cublasLtEpilogue_t LtEpilogue(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::kBias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

GemmArgs LinearForwardArgs(int rows, int in, int out, GemmOperand x, GemmOperand w,
                           const float* bias, const float* residual, float* y) {
  GemmArgs g;
  g.trans_b = true;
  g.m = rows;
  g.n = out;
  g.k = in;
  g.a = x;
  g.lda = in;
  g.b = w;
  g.ldb = in;
  g.beta = residual != nullptr ? 1.0f : 0.0f;
  g.c = residual;
  g.ldc = out;
  g.d = y;
  g.ldd = out;
  g.bias = bias;
  return g;
}

GemmArgs LinearInputGradArgs(int rows, int in, int out, GemmOperand dy, GemmOperand w, float* dx,
                             bool accumulate) {
  GemmArgs g;
  g.m = rows;
  g.n = in;
  g.k = out;
  g.a = dy;
  g.lda = out;
  g.b = w;
  g.ldb = in;
  g.beta = accumulate ? 1.0f : 0.0f;
  g.d = dx;
  g.ldd = in;
  return g;
}

GemmArgs LinearWeightGradArgs(int rows, int in, int out, GemmOperand dy, GemmOperand x, float* dw) {
  GemmArgs g;
  g.trans_a = true;
  g.m = out;
  g.n = in;
  g.k = rows;
  g.a = dy;
  g.lda = out;
  g.b = x;
  g.ldb = in;
  g.beta = 1.0f;
  g.d = dw;
  g.ldd = in;
  return g;
}

double MedianStreamSeconds(cudaStream_t stream, int warmup, int reps,
                           const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(std::max(reps, 1)));
  for (cudaEvent_t& e : events) PIPETTE_CUDA_CHECK(cudaEventCreate(&e));
  for (std::size_t i = 0; i < events.size(); i += 2) {
    PIPETTE_CUDA_CHECK(cudaEventRecord(events[i], stream));
    fn();
    PIPETTE_CUDA_CHECK(cudaEventRecord(events[i + 1], stream));
  }
  PIPETTE_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (std::size_t i = 0; i < events.size(); i += 2) {
    float ms = 0;
    PIPETTE_CUDA_CHECK(cudaEventElapsedTime(&ms, events[i], events[i + 1]));
    seconds.push_back(ms * 1e-3);
  }
  for (cudaEvent_t& e : events) (void)cudaEventDestroy(e);
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

bool GemmAutotuneFromEnv() {
  const char* value = std::getenv("PIPETTE_GEMM_AUTOTUNE");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// ---- RankDevice: GEMMs
// ----------------------------------------------------------------------------

void RankDevice::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  GemmArgs g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  g.a.f32 = a;
  g.lda = lda;
  g.b.f32 = b;
  g.ldb = ldb;
  g.beta = beta;
  g.d = c;
  g.ldd = ldc;
  Gemm(g);
}

namespace {

// D = beta C for an empty product (cuBLASLt refuses k = 0), beta 0 or 1, no bias.
void EmptyProduct(const GemmArgs& args, cudaStream_t stream) {
  if (args.bias != nullptr) throw std::invalid_argument("Gemm: k = 0 with a bias");
  const std::size_t row_bytes = static_cast<std::size_t>(args.n) * sizeof(float);
  const std::size_t d_pitch = static_cast<std::size_t>(args.ldd) * sizeof(float);
  if (args.beta == 0.0f) {
    PIPETTE_CUDA_CHECK(cudaMemset2DAsync(args.d, d_pitch, 0, row_bytes, args.m, stream));
  } else if (args.beta != 1.0f) {
    throw std::invalid_argument("Gemm: k = 0 with beta other than 0 or 1");
  } else if (!CIsD(args)) {
    PIPETTE_CUDA_CHECK(cudaMemcpy2DAsync(args.d, d_pitch, args.c,
                                         static_cast<std::size_t>(args.ldc) * sizeof(float),
                                         row_bytes, args.m, cudaMemcpyDeviceToDevice, stream));
  }
}

}  // namespace

const void* RankDevice::OperandData(const GemmOperand& op, std::int64_t span, int slot) {
  if (precision_ == GemmPrecision::kFp32) return op.f32;
  if (op.bf16 != nullptr) return op.bf16;
  return AsBf16(op.f32, span, slot);
}

GemmPlan& RankDevice::Plan(const GemmArgs& args, const GemmPlanKey& key) {
  const auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;
  int c_ld = 0;
  const ColumnMajorGemm g = AsColumnMajor(args, &c_ld);
  auto plan = std::make_unique<GemmPlan>(key, g, c_ld);
  auto ask = [&] {
    plan->desc.SetEpilogue(plan->bias_kernel ? GemmEpilogue::kNone : key.epilogue);
    if (key.epilogue == GemmEpilogue::kBias && !plan->bias_kernel) plan->desc.SetBias(args.bias);
    Preference pref(static_cast<std::size_t>(workspace_bytes_), key.alignment);
    std::vector<cublasLtMatmulHeuristicResult_t> results(kMaxCandidates);
    int found_count = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        lt_, plan->desc.handle, plan->a.handle, plan->b.handle, plan->c.handle, plan->d.handle,
        pref.handle, kMaxCandidates, results.data(), &found_count);
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) {  // not supported (the epilogue?): none found
      PIPETTE_CUBLAS_CHECK(status);
    } else {
      found_count = 0;
    }
    plan->candidates.clear();
    for (int i = 0; i < found_count; ++i) {
      if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->candidates.push_back(results[i]);
    }
  };
  ask();
  if (plan->candidates.empty() && key.epilogue == GemmEpilogue::kBias) {
    plan->bias_kernel = true;  // no algorithm with the epilogue for this shape: a kernel adds it
    ask();
  }
  if (plan->candidates.empty()) {
    throw std::runtime_error(fmt::format(
        "cuBLASLt offers no algorithm for the {} GEMM {}{} m {} n {} k {} (lda {}, ldb {}, ldc {}, "
        "ldd {}; operands {}-byte aligned){}",
        key.precision == GemmPrecision::kBf16 ? "bf16" : "fp32", args.trans_a ? "T" : "N",
        args.trans_b ? "T" : "N", args.m, args.n, args.k, args.lda, args.ldb, key.ldc, args.ldd,
        key.alignment, key.epilogue == GemmEpilogue::kBias ? " with a bias" : ""));
  }
  GemmPlan& made = *plan;
  plans_.emplace(key, std::move(plan));
  if (autotune_ && made.candidates.size() > 1) Autotune(args, made);
  return made;
}

void RankDevice::Gemm(const GemmArgs& args) {
  if (args.m == 0 || args.n == 0) return;
  if (args.k == 0) return EmptyProduct(args, stream_);
  if (args.c == args.d && args.c != nullptr && args.ldc != args.ldd) {
    throw std::invalid_argument("Gemm: C is D with ldc != ldd");
  }
  const GemmPlanKey key = MakeGemmPlanKey(args, precision_);
  GemmPlan& plan = Plan(args, key);
  int c_ld = 0;
  const ColumnMajorGemm g = AsColumnMajor(args, &c_ld);
  const void* first = OperandData(args.b, Span(g.first_rows, g.first_cols, g.first_ld), 0);
  const void* second = OperandData(args.a, Span(g.second_rows, g.second_cols, g.second_ld), 1);
  const bool epilogue_bias = key.epilogue == GemmEpilogue::kBias && !plan.bias_kernel;
  if (epilogue_bias) plan.desc.SetBias(args.bias);
  const float* c = key.c_is_d ? args.d : args.c;
  PIPETTE_CUBLAS_CHECK(cublasLtMatmul(lt_, plan.desc.handle, &args.alpha, first, plan.a.handle,
                                      second, plan.b.handle, &args.beta, c, plan.c.handle, args.d,
                                      plan.d.handle, &plan.algo(), workspace_,
                                      static_cast<std::size_t>(workspace_bytes_), stream_));
  if (plan.bias_kernel) {
    if (args.ldd != args.n) throw std::invalid_argument("Gemm: a bias needs ldd = n here");
    kernels::AddBias(args.d, args.bias, args.m, args.n, stream_);
  }
}

std::vector<double> RankDevice::TimeGemmAlgos(const GemmArgs& args, int max_algos, int warmup,
                                              int reps, int* chosen) {
  if (args.m == 0 || args.n == 0 || args.k == 0) return {};
  GemmPlan& plan = Plan(args, MakeGemmPlanKey(args, precision_));
  if (chosen != nullptr) *chosen = plan.chosen;
  int c_ld = 0;
  const ColumnMajorGemm g = AsColumnMajor(args, &c_ld);
  const void* first = OperandData(args.b, Span(g.first_rows, g.first_cols, g.first_ld), 0);
  const void* second = OperandData(args.a, Span(g.second_rows, g.second_cols, g.second_ld), 1);
  if (args.bias != nullptr && !plan.bias_kernel) plan.desc.SetBias(args.bias);
  void* scratch = nullptr;  // D's span: the timed runs leave the caller's D alone
  const std::size_t d_bytes = static_cast<std::size_t>(Span(g.c_rows, g.c_cols, g.c_ld)) * 4;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&scratch, d_bytes, stream_));
  float* d = static_cast<float*>(scratch);
  const float* c = CIsD(args) ? d : args.c;
  std::vector<double> seconds;
  const int count = std::min<int>(max_algos, static_cast<int>(plan.candidates.size()));
  for (int i = 0; i < count; ++i) {
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    const double s = MedianStreamSeconds(stream_, warmup, reps, [&] {
      const cublasStatus_t r = cublasLtMatmul(
          lt_, plan.desc.handle, &args.alpha, first, plan.a.handle, second, plan.b.handle,
          &args.beta, c, plan.c.handle, d, plan.d.handle, &plan.candidates[i].algo, workspace_,
          static_cast<std::size_t>(workspace_bytes_), stream_);
      if (r != CUBLAS_STATUS_SUCCESS) status = r;
    });
    seconds.push_back(status == CUBLAS_STATUS_SUCCESS ? s
                                                      : std::numeric_limits<double>::infinity());
  }
  PIPETTE_CUDA_CHECK(cudaFreeAsync(scratch, stream_));
  Synchronize();
  return seconds;
}

void RankDevice::Autotune(const GemmArgs& args, GemmPlan& plan) {
  // Timed on a scratch D; ties keep the heuristic's order, so the choice is the earliest fastest.
  const std::vector<double> seconds = TimeGemmAlgos(args, kMaxCandidates, 2, 5);
  const auto best = std::min_element(seconds.begin(), seconds.end());
  if (best != seconds.end() && std::isfinite(*best)) {
    plan.chosen = static_cast<int>(best - seconds.begin());
  }
}

// ---- RankDevice: bf16 shadows
// ---------------------------------------------------------------------

const __nv_bfloat16* RankDevice::Bf16Shadow(const DeviceTensor& w) { return MakeShadow(w, true); }

__nv_bfloat16* RankDevice::MakeShadow(const DeviceTensor& w, bool recast, bool cast) {
  if (w.shadow_ != nullptr) return w.shadow_->data;
  if (w.empty()) return nullptr;
  auto shadow = std::make_unique<Bf16ShadowBuffer>();
  shadow->source = w.data();
  shadow->n = w.size();
  shadow->stream = w.stream_;
  shadow->meter = w.meter_;
  void* p = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&p, static_cast<std::size_t>(shadow->n) * 2, w.stream_));
  shadow->data = static_cast<__nv_bfloat16*>(p);
  if (shadow->meter != nullptr) shadow->meter->Add(shadow->n * 2);
  if (cast) kernels::CastToBf16(w.data(), shadow->n, shadow->data, stream_);
  if (recast) {
    shadow->owner = this;
    shadows_.push_back(shadow.get());
  }
  w.shadow_ = std::move(shadow);
  return w.shadow_->data;
}

GemmOperand RankDevice::WeightOperand(const DeviceTensor& w) {
  GemmOperand op;
  op.f32 = w.data();
  if (precision_ == GemmPrecision::kBf16) op.bf16 = Bf16Shadow(w);
  return op;
}

GemmOperand RankDevice::ActivationOperand(const DeviceTensor& x) {
  GemmOperand op;
  op.f32 = x.data();
  if (precision_ == GemmPrecision::kBf16) op.bf16 = MakeShadow(x, false);
  return op;
}

__nv_bfloat16* RankDevice::ShadowToWrite(const DeviceTensor& t) {
  if (precision_ != GemmPrecision::kBf16) return nullptr;
  if (t.bf16_shadow() != nullptr) throw std::logic_error("ShadowToWrite: the tensor has a shadow");
  return MakeShadow(t, false, /*cast=*/false);
}

void RankDevice::RefreshBf16Shadows() {
  for (Bf16ShadowBuffer* shadow : shadows_) {
    kernels::CastToBf16(shadow->source, shadow->n, shadow->data, stream_);
  }
}

// ---- linear layers
// --------------------------------------------------------------------------------

void LinearForward(RankDevice& dev, const DeviceTensor& x, const DeviceTensor& w,
                   const DeviceTensor* bias, DeviceTensor& y, const DeviceTensor* residual) {
  dev.Gemm(LinearForwardArgs(x.rows(), x.cols(), w.rows(), dev.ActivationOperand(x),
                             dev.WeightOperand(w), bias != nullptr ? bias->data() : nullptr,
                             residual != nullptr ? residual->data() : nullptr, y.data()));
}

void LinearInputGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& w,
                     DeviceTensor& dx, bool accumulate) {
  dev.Gemm(LinearInputGradArgs(dy.rows(), w.cols(), w.rows(), dev.ActivationOperand(dy),
                               dev.WeightOperand(w), dx.data(), accumulate));
}

void LinearWeightGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& x,
                      DeviceTensor& dw, DeviceTensor* dbias) {
  const int n = dy.rows(), out = dy.cols(), in = x.cols();
  dev.Gemm(LinearWeightGradArgs(n, in, out, dev.ActivationOperand(dy), dev.ActivationOperand(x),
                                dw.data()));
  if (dbias != nullptr) kernels::BiasGrad(dy.data(), n, out, dbias->data(), dev.stream());
}

}  // namespace pipette::cuda
