#pragma once
// Reference twin of functional/detail/interp_kernels.hpp: one plane of separable interpolate as
// the plain loops it was, the oracle of the parity test run on every SIMD target.
#include <cstdint>

#include "functional/detail/interp_kernels.hpp"

namespace cvattn::reference {

inline void interp_plane(const float* in, std::int64_t h, std::int64_t w,
                         const functional::detail::InterpAxis& tx,
                         const functional::detail::InterpAxis& ty, const unsigned char* used,
                         float* tmp, float* out) {
  const std::int64_t ow = tx.n;
  if (tx.k == 1) {
    for (std::int64_t o = 0; o < ty.n; ++o) {
      const float* row = in + std::int64_t{ty.index[o]} * w;
      for (std::int64_t x = 0; x < ow; ++x) out[o * ow + x] = row[tx.index[x]];
    }
    return;
  }
  for (std::int64_t r = 0; r < h; ++r) {
    if (!used[r]) continue;
    const float* row = in + r * w;
    for (std::int64_t x = 0; x < ow; ++x) {
      float a = tx.weight[x] * row[tx.index[x]];
      for (int j = 1; j < tx.k; ++j) a = a + tx.weight[j * ow + x] * row[tx.index[j * ow + x]];
      tmp[r * ow + x] = a;
    }
  }
  for (std::int64_t o = 0; o < ty.n; ++o) {
    for (std::int64_t x = 0; x < ow; ++x) {
      float a = ty.weight[o] * tmp[std::int64_t{ty.index[o]} * ow + x];
      for (int j = 1; j < ty.k; ++j) {
        const std::int64_t at = j * ty.n + o;
        a = a + ty.weight[at] * tmp[std::int64_t{ty.index[at]} * ow + x];
      }
      out[o * ow + x] = a;
    }
  }
}

inline void interp_planes(const float* in, std::int64_t planes, std::int64_t h, std::int64_t w,
                          const functional::detail::InterpAxis& tx,
                          const functional::detail::InterpAxis& ty, const unsigned char* used,
                          float* tmp, float* out) {
  for (std::int64_t p = 0; p < planes; ++p) {
    interp_plane(in + p * h * w, h, w, tx, ty, used, tmp, out + p * ty.n * tx.n);
  }
}

}  // namespace cvattn::reference
