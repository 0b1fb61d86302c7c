#pragma once
// Reference twin of the volumetric grid_sample kernels (functional/grid_sample3d-inl.h):
// PyTorch's scalar 3-D CPU kernel (GridSampler.cpp, grid_sampler_3d_cpu_impl and its backward)
// written sample by sample, the oracle of the per-target parity test. Not tuned at all. Compile
// it without FMA contraction (tests/CMakeLists.txt), as PyTorch's float32 order has none.
#include <cmath>
#include <cstdint>
#include <limits>

#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/sampling.hpp"

namespace cvattn::reference {

namespace grid_sample3d_detail {

using functional::Interpolation;
using functional::PaddingMode;

// One axis of PyTorch's grid_sampler_compute_source_index: the pixel coordinate of normalised g
// in an axis of `size`.
inline float source(float g, std::int64_t size, PaddingMode padding, bool ac) {
  const auto fs = static_cast<float>(size);
  float pos = ac ? ((g + 1) / 2) * (fs - 1) : ((g + 1) * fs - 1) / 2;
  // std::min(size - 1, std::max(c, 0)): NaN passes the max, then the min returns the limit.
  const auto clip = [&](float c) { return std::fmin(fs - 1, c < 0.0f ? 0.0f : c); };
  if (padding == PaddingMode::border) {
    pos = clip(pos);
  } else if (padding == PaddingMode::reflection) {
    // Reflect into [lo, lo + span]: lo = 0, span = size - 1 with align_corners, else -0.5, size.
    const float lo = ac ? 0.0f : -0.5f;
    const float span = ac ? fs - 1 : fs;
    if (span <= 0.0f) {
      pos = 0.0f;
    } else {
      const float c = std::fabs(pos - lo);
      const float extra = std::fmod(c, span);
      const float flips = std::floor(c / span);
      // static_cast<int>(flips) % 2 as x86-64 computes it: beyond int32 (or NaN) it is INT_MIN.
      const bool odd = flips >= -2147483648.0f && flips < 2147483648.0f &&
                       static_cast<std::int64_t>(flips) % 2 != 0;
      pos = odd ? span - extra + lo : extra + lo;
    }
    pos = clip(pos);
  }
  // safe_downgrade_to_int_range
  if (!std::isfinite(pos) || pos > static_cast<float>(std::numeric_limits<int>::max() - 1) ||
      pos < static_cast<float>(std::numeric_limits<int>::min())) {
    return -100.0f;
  }
  return pos;
}

// vol[z, y, x], or 0 outside.
inline float at(const float* vol, std::int64_t d, std::int64_t h, std::int64_t w, std::int64_t x,
                std::int64_t y, std::int64_t z) {
  if (x < 0 || x >= w || y < 0 || y >= h || z < 0 || z >= d) return 0.0f;
  return vol[(z * h + y) * w + x];
}

// std::round as an index; |v| >= 1e9 and NaN lie outside every volume.
inline std::int64_t nearest(float v) {
  return std::fabs(v) < 1e9f ? static_cast<std::int64_t>(std::round(v)) : -1;
}

}  // namespace grid_sample3d_detail

// grid_sample of input [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] (no validation: the caller
// passes shapes the optimised version accepts).
inline Tensor grid_sample3d(const Tensor& input, const Tensor& grid,
                            const functional::GridSampleOptions& o) {
  using namespace grid_sample3d_detail;
  const std::int64_t n = input.dim(0), c = input.dim(1), d = input.dim(2), h = input.dim(3),
                     w = input.dim(4);
  const std::int64_t vo = grid.dim(1) * grid.dim(2) * grid.dim(3);
  Tensor out = Tensor::empty({n, c, grid.dim(1), grid.dim(2), grid.dim(3)});
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t p = 0; p < vo; ++p) {
      const float* g = grid.data() + (b * vo + p) * 3;
      const float x = source(g[0], w, o.padding_mode(), o.align_corners());
      const float y = source(g[1], h, o.padding_mode(), o.align_corners());
      const float z = source(g[2], d, o.padding_mode(), o.align_corners());
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const float* vol = input.data() + (b * c + ch) * d * h * w;
        float v = 0.0f;
        if (o.mode() == Interpolation::nearest) {
          v = at(vol, d, h, w, nearest(x), nearest(y), nearest(z));
        } else {
          const auto x0 = static_cast<std::int64_t>(std::floor(x));
          const auto y0 = static_cast<std::int64_t>(std::floor(y));
          const auto z0 = static_cast<std::int64_t>(std::floor(z));
          const float wx[2] = {static_cast<float>(x0 + 1) - x, x - static_cast<float>(x0)};
          const float wy[2] = {static_cast<float>(y0 + 1) - y, y - static_cast<float>(y0)};
          const float wz[2] = {static_cast<float>(z0 + 1) - z, z - static_cast<float>(z0)};
          for (int k = 0; k < 8; ++k) {  // tnw, tne, tsw, tse, bnw, bne, bsw, bse
            const int dx = k & 1, dy = (k >> 1) & 1, dz = k >> 2;
            if (x0 + dx < 0 || x0 + dx >= w || y0 + dy < 0 || y0 + dy >= h || z0 + dz < 0 ||
                z0 + dz >= d) {
              continue;
            }
            v += at(vol, d, h, w, x0 + dx, y0 + dy, z0 + dz) * (wx[dx] * wy[dy] * wz[dz]);
          }
        }
        out[(b * c + ch) * vo + p] = v;
      }
    }
  }
  return out;
}

}  // namespace cvattn::reference
