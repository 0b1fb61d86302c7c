#pragma once
// Reference twin of functional/detail/pool_kernels.hpp: the pooling plane loops one element at a
// time, the oracle of the parity test run on every SIMD target.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "functional/detail/pool_kernels.hpp"

namespace cvattn::reference {

inline float max_nan(float a, float b) { return ((b > a) | (b != b)) ? b : a; }

inline void max_pool_plane(const float* src, const functional::detail::PoolPlane& g, float* out) {
  for (std::int64_t oy = 0; oy < g.ho; ++oy) {
    for (std::int64_t ox = 0; ox < g.wo; ++ox) {
      // Rows first, then columns, as the kernel folds them (the order decides which NaN wins
      // only in its payload, which the test does not compare).
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t v = 0; v < g.kw; ++v) {
        float col = -std::numeric_limits<float>::infinity();
        const std::int64_t ix = ox * g.sw - g.pw + v * g.dw;
        for (std::int64_t u = 0; u < g.kh; ++u) {
          const std::int64_t iy = oy * g.sh - g.ph + u * g.dh;
          if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) col = max_nan(col, src[iy * g.w + ix]);
        }
        m = max_nan(m, col);
      }
      out[oy * g.wo + ox] = m;
    }
  }
}

// The sums in the kernel's order (rows into column sums, then the window's columns), divided.
inline void avg_pool_plane(const float* src, const functional::detail::PoolPlane& g,
                           const float* row_count, const float* col_count, float divisor,
                           float* out) {
  for (std::int64_t oy = 0; oy < g.ho; ++oy) {
    for (std::int64_t ox = 0; ox < g.wo; ++ox) {
      float sum = 0.0f;
      for (std::int64_t v = 0; v < g.kw; ++v) {
        const std::int64_t ix = ox * g.sw - g.pw + v;
        float col = 0.0f;
        for (std::int64_t u = 0; u < g.kh; ++u) {
          const std::int64_t iy = oy * g.sh - g.ph + u;
          if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) col += src[iy * g.w + ix];
        }
        sum += col;
      }
      const float d = divisor != 0.0f ? divisor : row_count[oy] * col_count[ox];
      out[oy * g.wo + ox] = sum / (d == 0.0f ? 1.0f : d);
    }
  }
}

inline void fold_rows(bool max, const float* src, std::int64_t n, std::int64_t lo, std::int64_t hi,
                      float* acc) {
  for (std::int64_t r = lo; r < hi; ++r) {
    for (std::int64_t i = 0; i < n; ++i) {
      acc[i] = max ? max_nan(acc[i], src[r * n + i]) : acc[i] + src[r * n + i];
    }
  }
}

// Row sums as four partial sums over i % 4 (then the tail in order), column sums in row order.
inline void row_column_means(const float* src, std::int64_t h, std::int64_t w, float* rows,
                             float* cols) {
  for (std::int64_t i = 0; i < w; ++i) cols[i] = 0.0f;
  const std::int64_t body = w - w % 4;
  for (std::int64_t r = 0; r < h; ++r) {
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (std::int64_t i = 0; i < body; ++i) part[i % 4] += src[r * w + i];
    float sum = (part[0] + part[1]) + (part[2] + part[3]);
    for (std::int64_t i = body; i < w; ++i) sum += src[r * w + i];
    rows[r] = sum / static_cast<float>(w);
    for (std::int64_t i = 0; i < w; ++i) cols[i] += src[r * w + i];
  }
  for (std::int64_t i = 0; i < w; ++i) cols[i] /= static_cast<float>(h);
}

}  // namespace cvattn::reference
