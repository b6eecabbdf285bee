#include "device.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
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
};

}  // namespace

// ---- DeviceTensor
// ---------------------------------------------------------------------------------

DeviceTensor::DeviceTensor(int rows, int cols, cudaStream_t stream, DeviceMeter* meter)
    : rows_(rows), cols_(cols), stream_(stream), meter_(meter) {
  if (bytes() == 0) return;
  void* p = nullptr;
  PIPETTE_CUDA_CHECK(cudaMallocAsync(&p, static_cast<std::size_t>(bytes()), stream_));
  PIPETTE_CUDA_CHECK(cudaMemsetAsync(p, 0, static_cast<std::size_t>(bytes()), stream_));
  data_ = static_cast<float*>(p);
  if (meter_ != nullptr) meter_->Add(bytes());
}

DeviceTensor::~DeviceTensor() { Release(); }

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      stream_(other.stream_),
      meter_(other.meter_) {}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    Release();
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    data_ = std::exchange(other.data_, nullptr);
    stream_ = other.stream_;
    meter_ = other.meter_;
  }
  return *this;
}

void DeviceTensor::set_meter(DeviceMeter* meter) {
  if (meter_ != nullptr) meter_->live -= bytes();
  meter_ = meter;
  if (meter_ != nullptr) meter_->Add(bytes());
}

void DeviceTensor::Release() {
  if (data_ == nullptr) return;
  (void)cudaFreeAsync(data_, stream_);  // a destructor does not throw; a failed free leaks
  if (meter_ != nullptr) meter_->live -= bytes();
  data_ = nullptr;
  rows_ = cols_ = 0;
}

// ---- RankDevice
// -----------------------------------------------------------------------------------

RankDevice::RankDevice(GemmPrecision precision) : precision_(precision) {
  // The stream-ordered pool keeps what it has: with its default release threshold (0) every
  // synchronisation (one per instruction) would return its memory to the OS and the next
  // instruction would map it again, inside the timed instructions.
  int device = 0;
  cudaMemPool_t pool = nullptr;
  PIPETTE_CUDA_CHECK(cudaGetDevice(&device));
  PIPETTE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep = UINT64_MAX;
  PIPETTE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  PIPETTE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PIPETTE_CUBLAS_CHECK(cublasLtCreate(&lt_));
  workspace_bytes_ = kWorkspaceBytes;
  PIPETTE_CUDA_CHECK(
      cudaMallocAsync(&workspace_, static_cast<std::size_t>(workspace_bytes_), stream_));
  meter_.Add(workspace_bytes_);
}

RankDevice::~RankDevice() {
  for (void* p : bf16_) (void)cudaFreeAsync(p, stream_);
  (void)cudaFreeAsync(workspace_, stream_);
  (void)cudaStreamSynchronize(stream_);
  (void)cublasLtDestroy(lt_);
  (void)cudaStreamDestroy(stream_);
}

DeviceTensor RankDevice::Clone(const DeviceTensor& t) {
  DeviceTensor copy = Tensor(t.rows(), t.cols());
  if (!t.empty()) {
    PIPETTE_CUDA_CHECK(cudaMemcpyAsync(copy.data(), t.data(), static_cast<std::size_t>(t.bytes()),
                                       cudaMemcpyDeviceToDevice, stream_));
  }
  return copy;
}

DeviceTensor RankDevice::Upload(const float* host, int rows, int cols) {
  DeviceTensor t = Tensor(rows, cols);
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

void RankDevice::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty product: C = beta C (cuBLASLt refuses k = 0)
    if (beta == 1.0f) return;
    if (beta != 0.0f) throw std::invalid_argument("Gemm: k = 0 with beta other than 0 or 1");
    PIPETTE_CUDA_CHECK(cudaMemset2DAsync(c, static_cast<std::size_t>(ldc) * sizeof(float), 0,
                                         static_cast<std::size_t>(n) * sizeof(float), m, stream_));
    return;
  }
  const ColumnMajorGemm g = AsColumnMajor(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  const bool bf16 = precision_ == GemmPrecision::kBf16;
  const cudaDataType_t in_type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  // Elements each operand spans in memory: all columns but the last whole, the last to its rows.
  const std::int64_t first_span =
      static_cast<std::int64_t>(g.first_cols - 1) * g.first_ld + g.first_rows;
  const std::int64_t second_span =
      static_cast<std::int64_t>(g.second_cols - 1) * g.second_ld + g.second_rows;
  const void* first = bf16 ? AsBf16(b, first_span, 0) : b;
  const void* second = bf16 ? AsBf16(a, second_span, 1) : a;
  MatmulDesc desc(g.first_op_t, g.second_op_t);
  Layout l1(in_type, g.first_rows, g.first_cols, g.first_ld);
  Layout l2(in_type, g.second_rows, g.second_cols, g.second_ld);
  Layout lc(CUDA_R_32F, g.c_rows, g.c_cols, g.c_ld);
  cublasLtMatmulPreference_t pref = nullptr;
  PIPETTE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::size_t ws = static_cast<std::size_t>(workspace_bytes_);
  PIPETTE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(
      lt_, desc.handle, l1.handle, l2.handle, lc.handle, lc.handle, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  PIPETTE_CUBLAS_CHECK(heuristic);
  if (found == 0) PIPETTE_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
  PIPETTE_CUBLAS_CHECK(cublasLtMatmul(lt_, desc.handle, &alpha, first, l1.handle, second, l2.handle,
                                      &beta, c, lc.handle, c, lc.handle, &result.algo, workspace_,
                                      ws, stream_));
}

// ---- linear layers
// --------------------------------------------------------------------------------

void LinearForward(RankDevice& dev, const DeviceTensor& x, const DeviceTensor& w,
                   const DeviceTensor* bias, DeviceTensor& y) {
  const int n = x.rows(), in = x.cols(), out = w.rows();
  dev.Gemm(false, true, n, out, in, 1.0f, x.data(), in, w.data(), in, 0.0f, y.data(), out);
  if (bias != nullptr) kernels::AddBias(y.data(), bias->data(), n, out, dev.stream());
}

void LinearInputGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& w,
                     DeviceTensor& dx, bool accumulate) {
  const int n = dy.rows(), out = w.rows(), in = w.cols();
  dev.Gemm(false, false, n, in, out, 1.0f, dy.data(), out, w.data(), in, accumulate ? 1.0f : 0.0f,
           dx.data(), in);
}

void LinearWeightGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& x,
                      DeviceTensor& dw, DeviceTensor* dbias) {
  const int n = dy.rows(), out = dy.cols(), in = x.cols();
  dev.Gemm(true, false, out, in, n, 1.0f, dy.data(), out, x.data(), in, 1.0f, dw.data(), in);
  if (dbias != nullptr) kernels::BiasGrad(dy.data(), n, out, dbias->data(), dev.stream());
}

}  // namespace pipette::cuda
