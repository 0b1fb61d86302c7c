#pragma once
// Reference twins of functional/detail/channel_kernels.hpp: the definitions in plain loops, the
// oracles of the parity test run on every SIMD target.
#include <cmath>
#include <cstdint>
#include <limits>

#include "functional/reference/reduce.hpp"

namespace cvattn::reference {

inline void scale_plane(const float* x, float* y, float g, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * g;
}

// pooled[c] = mean of plane c, or 0.5 * mean + 0.5 * max with add_max (plane_mean_max).
inline void pool_planes(const float* x, std::int64_t count, std::int64_t hw, bool add_max,
                        float* pooled) {
  for (std::int64_t c = 0; c < count; ++c) {
    const detail::PlaneStats st = plane_mean_max(x + c * hw, hw);
    pooled[c] = add_max ? 0.5f * st.mean + 0.5f * st.max : st.mean;
  }
}

// out[r] = float(sum_c w[r, c] * v[c] + bias[r]), the sum in double in column order.
inline void dot_rows(const float* w, std::int64_t rows, std::int64_t cols, const float* v,
                     const float* bias, float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double acc = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) acc += static_cast<double>(w[r * cols + c]) * v[c];
    out[r] = static_cast<float>(bias != nullptr ? acc + bias[r] : acc);
  }
}

inline void affine_plane(const float* x, float* y, float a, float b, const float* r,
                         std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i] * a + b;
    y[i] = r ? v + r[i] : v;
  }
}

inline void scale_plane2(const float* x, float* y, float g, const float* s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = (x[i] * g) * s[i];
}

// mean[p - p0] = (sum over c in order of x[c, p] * g[c]) / C, max[p - p0] = amax over c (NaN
// propagates).
inline void channel_mean_max_scaled(const float* x, const float* g, std::int64_t channels,
                                    std::int64_t hw, std::int64_t p0, std::int64_t p1, float* mean,
                                    float* max) {
  for (std::int64_t p = p0; p < p1; ++p) {
    float sum = 0.0f;
    float m = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (std::int64_t c = 0; c < channels; ++c) {
      const float v = x[c * hw + p] * g[c];
      sum = c == 0 ? v : sum + v;
      m = v > m ? v : m;
      nan = nan || std::isnan(v);
    }
    mean[p - p0] = sum / static_cast<float>(channels);
    max[p - p0] = nan ? std::numeric_limits<float>::quiet_NaN() : m;
  }
}

// Rows [row0, row1) of the 2 -> 1 channel k x k conv over padded [2, h + k - 1, w + k - 1],
// summed in double.
inline void spatial_conv(const float* padded, const float* weight, std::int64_t k, std::int64_t h,
                         std::int64_t w, std::int64_t row0, std::int64_t row1, float* out) {
  const std::int64_t hp = h + k - 1, wp = w + k - 1;
  for (std::int64_t oy = row0; oy < row1; ++oy) {
    for (std::int64_t ox = 0; ox < w; ++ox) {
      double acc = 0.0;
      for (std::int64_t ci = 0; ci < 2; ++ci) {
        for (std::int64_t ky = 0; ky < k; ++ky) {
          for (std::int64_t kx = 0; kx < k; ++kx) {
            acc += static_cast<double>(weight[(ci * k + ky) * k + kx]) *
                   padded[(ci * hp + oy + ky) * wp + ox + kx];
          }
        }
      }
      out[oy * w + ox] = static_cast<float>(acc);
    }
  }
}

}  // namespace cvattn::reference
