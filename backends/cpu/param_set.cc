#include "param_set.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace pipette::cpu {

void ParamSet::Add(ModuleChain& chain) {
  for (auto& module : chain.modules()) {
    for (Param& param : module->params()) entries_[param.name].copies.push_back(&param);
  }
}

void ParamSet::AllocateOptimizerState() {
  for (auto& [name, e] : entries_) {
    const Tensor& value = e.copies.front()->value;
    e.m = Tensor(value.rows(), value.cols());
    e.v = Tensor(value.rows(), value.cols());
  }
}

std::int64_t ParamSet::NumElements() const {
  std::int64_t n = 0;
  for (const auto& [name, e] : entries_)
    n += static_cast<std::int64_t>(e.copies.front()->value.size());
  return n;
}

void ParamSet::SumLocalCopies() {
  for (auto& [name, e] : entries_) {
    Tensor& sum = e.copies.front()->grad;
    for (std::size_t c = 1; c < e.copies.size(); ++c) {
      const Tensor& g = e.copies[c]->grad;
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
    }
  }
}

void ParamSet::Step(const AdamWConfig& config, int step) {
  const double c1 = 1.0 - std::pow(config.beta1, step);
  const double c2 = 1.0 - std::pow(config.beta2, step);
  const float b1 = static_cast<float>(config.beta1), b2 = static_cast<float>(config.beta2);
  for (auto& [name, e] : entries_) {
    Param& p = *e.copies.front();
    const float decay = p.decay ? static_cast<float>(config.lr * config.weight_decay) : 0.0f;
    for (std::size_t i = 0; i < p.value.size(); ++i) {
      const float g = p.grad[i];
      e.m[i] = b1 * e.m[i] + (1 - b1) * g;
      e.v[i] = b2 * e.v[i] + (1 - b2) * g * g;
      const double mhat = e.m[i] / c1, vhat = e.v[i] / c2;
      p.value[i] -= decay * p.value[i] +
                    static_cast<float>(config.lr * mhat / (std::sqrt(vhat) + config.eps));
    }
    for (Param* copy : e.copies) {
      if (copy != &p) std::memcpy(copy->value.data(), p.value.data(), p.value.bytes());
      std::fill(copy->grad.data(), copy->grad.data() + copy->grad.size(), 0.0f);
    }
  }
}

}  // namespace pipette::cpu
