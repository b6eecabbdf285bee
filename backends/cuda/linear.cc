#include "linear.h"

#include "kernels.h"

namespace pipette::cuda {

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
