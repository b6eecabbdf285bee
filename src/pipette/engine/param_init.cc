#include "pipette/engine/param_init.h"

#include <cmath>

namespace pipette {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny portable generator, so initial weights are the
// same with every standard library.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1).
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double Normal() {
    const double u = Uniform(), v = Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

 private:
  std::uint64_t state_;
};

std::uint64_t HashName(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ seed;  // FNV-1a over the name, keyed by the seed
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

void InitParamValues(std::uint64_t seed, std::string_view name, float stddev, float fill,
                     float* out, std::size_t n) {
  if (stddev > 0) {
    SplitMix64 rng(HashName(seed, name));
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(stddev * rng.Normal());
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = fill;
  }
}

}  // namespace pipette
