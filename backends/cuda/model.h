// The CUDA engine's decoder: the CPU engine's modules (backends/cpu/gpt.h) on the device, for the
// GPT block (LayerNorm, GELU, biases, learned positions) and the Llama block (RMSNorm, RoPE,
// SwiGLU, grouped-query attention), one module per model graph layer with separate Forward,
// InputGrad (I) and WeightGrad (W) passes. Parameter names, shapes and initial values are the CPU
// engine's (pipette/engine/param_init.h), so the two engines compute the same model and the CPU
// engine checks this one. Not thread-safe; a module serves one rank.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "device_tensor.h"
#include "gemm_plan.h"
#include "pipette/common/status.h"
#include "pipette/engine/corpus.h"
#include "pipette/engine/train_plan.h"
#include "pipette/model/decoder.h"
#include "rank_device.h"

namespace pipette::cuda {

// One microbatch on the device: the host batch and its tokens and targets in device memory.
struct DeviceBatch {
  const Batch* host = nullptr;
  std::int32_t* tokens = nullptr;
  std::int32_t* targets = nullptr;
  // The rank's step total of microbatch mean losses (one device double): the loss module adds
  // its microbatch's mean here on the stream; null when no loss module runs on this batch.
  double* loss_sum = nullptr;
  int num_tokens() const { return host->num_tokens(); }
};

struct DeviceParam {
  std::string name;
  DeviceTensor value;
  DeviceTensor grad;
  bool decay = false;
};

struct DeviceCache {
  std::vector<DeviceTensor> saved;
};

class DeviceModule {
 public:
  DeviceModule(std::string name, RankDevice& dev) : name_(std::move(name)), dev_(dev) {}
  virtual ~DeviceModule() = default;

  const std::string& name() const { return name_; }
  std::deque<DeviceParam>& params() { return params_; }

  virtual int OutputCols() const = 0;
  virtual DeviceTensor Forward(const DeviceBatch& batch, DeviceTensor x, DeviceCache& cache) = 0;
  // Returns dx (empty for the embedding). `dy` is empty for the loss.
  virtual DeviceTensor InputGrad(const DeviceBatch& batch, DeviceTensor dy, DeviceCache& cache) = 0;
  virtual void WeightGrad(const DeviceBatch& batch, DeviceCache& cache) = 0;

 protected:
  RankDevice& dev() { return dev_; }
  // Adds a parameter with the CPU engine's initial values for (seed, its full name).
  DeviceParam& AddParam(std::string_view param, int rows, int cols, std::uint64_t seed,
                        float stddev, float fill, bool decay, std::string_view full_name = {});

 private:
  std::string name_;
  RankDevice& dev_;
  std::deque<DeviceParam> params_;
};

// The columns of the engine's logits (and their gradient): the vocabulary padded to a multiple of
// 64, as Megatron-LM and llm.c pad it, so that every row starts 256-byte aligned in fp32 and
// 128-byte aligned in bf16 and cuBLASLt offers its fast kernels for the head's GEMMs (GPT-2's
// 50257 columns would leave bf16 rows 2-byte aligned). The parameters keep the vocabulary's rows;
// the padding columns are zero and no softmax or GEMM reads them, so the math is unchanged.
int LogitsCols(int vocab);
// The head's GEMMs over padded logits (rows x LogitsCols(vocab), the first `vocab` columns real),
// weight w vocab x hidden: logits = x W^T; dx = dlogits W; dw += dlogits^T x.
GemmArgs HeadForwardArgs(int rows, int hidden, int vocab, GemmOperand x, GemmOperand w,
                         float* logits);
GemmArgs HeadInputGradArgs(int rows, int hidden, int vocab, GemmOperand dlogits, GemmOperand w,
                           float* dx);
GemmArgs HeadWeightGradArgs(int rows, int hidden, int vocab, GemmOperand dlogits, GemmOperand x,
                            float* dw);
// The columns of stage `stage`'s output tensor on the device: the plan's, padded (LogitsCols)
// where the stage ends with the head. What a message of that shape carries between ranks.
int DeviceOutputCols(const TrainPlan& plan, int stage);

// The module of graph layer `layer` of `spec`, on `dev`. InvalidArgument for an unknown layer.
Result<std::unique_ptr<DeviceModule>> MakeDeviceModule(const DecoderSpec& spec,
                                                       std::string_view layer, std::uint64_t seed,
                                                       RankDevice& dev);

// A run of consecutive modules: one pipeline stage.
class DeviceChain {
 public:
  void Add(std::unique_ptr<DeviceModule> module) { modules_.push_back(std::move(module)); }
  std::vector<std::unique_ptr<DeviceModule>>& modules() { return modules_; }
  int OutputCols() const { return modules_.back()->OutputCols(); }

  DeviceTensor Forward(const DeviceBatch& batch, DeviceTensor x, std::vector<DeviceCache>& caches);
  DeviceTensor InputGrad(const DeviceBatch& batch, DeviceTensor dy,
                         std::vector<DeviceCache>& caches);
  void WeightGrad(const DeviceBatch& batch, std::vector<DeviceCache>& caches);
  static std::int64_t CacheBytes(const std::vector<DeviceCache>& caches);

 private:
  std::vector<std::unique_ptr<DeviceModule>> modules_;
};

}  // namespace pipette::cuda
