#pragma once
// A portable PRNG (SplitMix64) so random test data is identical with every standard library.
#include <cstdint>
#include <vector>

#include "cvattn/core/tensor.hpp"

namespace cvattn::test {

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float uniform(float lo = -1.0f, float hi = 1.0f) {
    const double u = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(lo + (hi - lo) * u);
  }

 private:
  std::uint64_t state_;
};

inline Tensor random_tensor(const Shape& shape, std::uint64_t seed, float lo = -1.0f,
                            float hi = 1.0f) {
  Tensor t = Tensor::empty(shape);
  Random rng(seed);
  for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = rng.uniform(lo, hi);
  return t;
}

// n floats uniform in [lo, hi), for kernels that take raw arrays.
inline std::vector<float> random_vector(std::int64_t n, std::uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  Random rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

}  // namespace cvattn::test
