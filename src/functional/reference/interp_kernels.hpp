#pragma once
// Reference twin of functional/detail/interp_kernels.hpp: interpolate's blend along H as the plain
// loop it was, the oracle of the parity test run on every SIMD target.
#include <cstdint>

namespace cvattn::reference {

inline void interp_blend(const float* const* t, const float* w, int k, std::int64_t n, float* o) {
  for (std::int64_t x = 0; x < n; ++x) {
    float a = w[0] * t[0][x];
    for (int j = 1; j < k; ++j) a = a + w[j] * t[j][x];
    o[x] = a;
  }
}

}  // namespace cvattn::reference
