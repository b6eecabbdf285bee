// The GPT and Llama decoders of the CPU engine, as modules that match the model graph's layers one
// to one (model/decoder.h): `embedding`, `block{i}.attn`, `block{i}.mlp`, `final_norm`, `head`,
// `loss` (engine/decoder_layers.h). One block-half module serves both halves of both decoders:
// a GPT spec gets LayerNorm, biases and GELU, a Llama-style one (bias = false) RMSNorm, RoPE,
// SwiGLU and grouped-query attention, whose parameter names and layouts the CUDA engine mirrors
// (backends/cpu/README.md, "The Llama block"); the final norm follows the same choice, and the
// embedding (without a position table under RoPE), head and loss are shared.
// A pipeline stage is a run of consecutive modules, so the partitioner's cut of the graph is the
// engine's cut of the model.
//
// Every module has three separate passes, the split the zero-bubble schedules need:
//   Forward     x -> y, keeping what the backward needs;
//   InputGrad   dy -> dx, releasing the forward's tensors except the inputs of the weight
//               gradients, which it keeps (the I of an I/W-split schedule);
//   WeightGrad  accumulates the parameter gradients from what InputGrad kept, and frees it (W).
// A full backward B is InputGrad then WeightGrad.
//
// Parameters are named "<layer>.<param>" and initialised from (seed, name) alone, so a model is
// the same whatever the partition; a tied LM head names the embedding's table ("embedding.wte"),
// and copies of one parameter on several stages start equal and are kept equal by summing their
// gradients. Not thread-safe; one module serves one rank.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/corpus.h"
#include "pipette/engine/decoder_layers.h"  // LayerNames: the layers MakeModule builds
#include "pipette/model/decoder.h"
#include "tensor.h"

namespace pipette::cpu {

// The built-in model that `pipette train` uses by default: the model layer's "tiny" preset
// (model/model_presets.h): 4 blocks, width 64, 4 heads, MLP 256, vocabulary 64, context 32, untied
// head. About 0.22 M parameters; a step takes milliseconds.
DecoderSpec TinyDecoder();

struct Param {
  std::string name;
  Tensor value;
  Tensor grad;
  bool decay = false;  // AdamW weight decay applies (matrices; not biases, norms or embeddings)
};

// What one module keeps for one microbatch between its passes.
struct Cache {
  std::vector<Tensor> saved;
  float loss = 0;  // the loss module: the microbatch's mean loss
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)), profile_kind_(ModuleKindOf(name_)) {}
  virtual ~Module() = default;

  const std::string& name() const { return name_; }
  // Its ModuleKind in a kernel profile (engine/kernel_profile.h); -1 for none.
  int profile_kind() const { return profile_kind_; }
  std::deque<Param>& params() { return params_; }
  const std::deque<Param>& params() const { return params_; }

  // Columns of the output for a microbatch (rows: its tokens); the loss module outputs 1 x 1.
  virtual int OutputCols() const = 0;
  virtual Tensor Forward(const Batch& batch, Tensor x, Cache& cache) = 0;
  // Returns dx (empty for the embedding, whose input is tokens). `dy` is empty for the loss.
  virtual Tensor InputGrad(const Batch& batch, Tensor dy, Cache& cache) = 0;
  virtual void WeightGrad(const Batch& batch, Cache& cache) = 0;

 protected:
  // Adds a parameter initialised from N(0, stddev^2) (stddev 0: `fill` everywhere).
  Param& AddParam(std::string_view param, int rows, int cols, std::uint64_t seed, float stddev,
                  float fill, bool decay, std::string_view full_name = {});

 private:
  std::string name_;
  int profile_kind_;
  std::deque<Param> params_;  // a deque: modules keep pointers to their parameters
};

// Builds the module of graph layer `layer` of `spec` with parameters from `seed`. Errors:
// InvalidArgument for a layer name the decoder does not have.
Result<std::unique_ptr<Module>> MakeModule(const DecoderSpec& spec, std::string_view layer,
                                           std::uint64_t seed);

// A run of consecutive modules: one pipeline stage, or the whole model for the reference.
class ModuleChain {
 public:
  void Add(std::unique_ptr<Module> module) { modules_.push_back(std::move(module)); }
  std::vector<std::unique_ptr<Module>>& modules() { return modules_; }
  const std::vector<std::unique_ptr<Module>>& modules() const { return modules_; }
  int OutputCols() const { return modules_.back()->OutputCols(); }

  // The passes over all modules; `caches` holds one Cache per module for this microbatch.
  Tensor Forward(const Batch& batch, Tensor x, std::vector<Cache>& caches);
  Tensor InputGrad(const Batch& batch, Tensor dy, std::vector<Cache>& caches);
  void WeightGrad(const Batch& batch, std::vector<Cache>& caches);
  // Bytes the caches of one microbatch hold.
  static std::int64_t CacheBytes(const std::vector<Cache>& caches);

 private:
  std::vector<std::unique_ptr<Module>> modules_;
};

}  // namespace pipette::cpu
