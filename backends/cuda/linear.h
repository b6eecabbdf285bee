// The linear layers of the CUDA engine on cuBLASLt: y = x W^T + b (+ residual) and its two
// gradients, each one GEMM of a RankDevice (rank_device.h), and the GEMMs themselves as plain
// values (LinearForwardArgs, ...: pure functions, checked without a GPU by gemm_plan_test).
//
// The functions own nothing: the tensors are the caller's, the plans and shadows the rank's.
// Work is enqueued on the rank's stream; used from the rank's thread only.
#pragma once

#include "device_tensor.h"
#include "gemm_plan.h"
#include "rank_device.h"

namespace pipette::cuda {

// The GEMMs of the linear layers (row-major, `rows` tokens, weight w out x in), as plain values:
// y = x W^T (+ bias in the epilogue) (+ residual as C with beta 1, D = y).
GemmArgs LinearForwardArgs(int rows, int in, int out, GemmOperand x, GemmOperand w,
                           const float* bias, const float* residual, float* y);
// dx (+)= dy W.
GemmArgs LinearInputGradArgs(int rows, int in, int out, GemmOperand dy, GemmOperand w, float* dx,
                             bool accumulate);
// dw += dy^T x (no epilogue: the bias gradient is a kernel, see LinearWeightGrad).
GemmArgs LinearWeightGradArgs(int rows, int in, int out, GemmOperand dy, GemmOperand x, float* dw);

// y = x W^T + bias (+ residual) (bias and residual may be null): the CPU engine's LinearForward
// (and the residual add after it) as one cuBLASLt call, the bias in its epilogue and the
// residual as its C (beta 1, C != D). At bf16 precision W is read from its shadow.
void LinearForward(RankDevice& dev, const DeviceTensor& x, const DeviceTensor& w,
                   const DeviceTensor* bias, DeviceTensor& y,
                   const DeviceTensor* residual = nullptr);
// dx = dy W (accumulates into dx when `accumulate`).
void LinearInputGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& w,
                     DeviceTensor& dx, bool accumulate = false);
// dw += dy^T x; dbias += column sums of dy (dbias may be null) by the BiasGrad kernel: cuBLASLt's
// BGRAD epilogues overwrite their vector (dbias accumulates over microbatches) and, at bf16,
// would sum the rounded dy.
void LinearWeightGrad(RankDevice& dev, const DeviceTensor& dy, const DeviceTensor& x,
                      DeviceTensor& dw, DeviceTensor* dbias);

}  // namespace pipette::cuda
