#pragma once
// Reference twin of functional/detail/affine_grid_kernel.hpp: affine_grid's rows element by
// element in plain loops, rounded as PyTorch's GEMM rounds them (x*t0, then each further
// coordinate's product fused onto it in turn, then + the offset; docs/modules.md §7), the oracle
// of the per-target parity test.
#include <cmath>
#include <cstdint>

namespace cvattn::reference {

// detail::affine_grid_rows: row r (at height ys[r]) of [x, y, 1] times theta [2, 3]^T, the pair
// (gx, gy) of xs[i] at out[r * 2w + 2i].
inline void affine_grid_rows(const float* xs, const float* ys, std::int64_t rows,
                             const float* theta, float* out, std::int64_t w) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < w; ++i) {
      for (int k = 0; k < 2; ++k) {
        const float* t = theta + 3 * k;
        out[(r * w + i) * 2 + k] = std::fma(ys[r], t[1], xs[i] * t[0]) + t[2];
      }
    }
  }
}

// detail::affine_grid_rows_3d: row r at height ys[r] and depth z of [x, y, z, 1] times
// theta [3, 4]^T, the triple (gx, gy, gz) of xs[i] at out[r * 3w + 3i].
inline void affine_grid_rows_3d(const float* xs, const float* ys, std::int64_t rows, float z,
                                const float* theta, float* out, std::int64_t w) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < w; ++i) {
      for (int k = 0; k < 3; ++k) {
        const float* t = theta + 4 * k;
        out[(r * w + i) * 3 + k] = std::fma(z, t[2], std::fma(ys[r], t[1], xs[i] * t[0])) + t[3];
      }
    }
  }
}

}  // namespace cvattn::reference
