#pragma once
// Reference twin of the grid_sample forward kernels (functional/grid_sample-inl.h): PyTorch's
// definition sample by sample in plain scalar code (its float32 coordinate arithmetic, corner
// order and NaN rules), the oracle of the per-target parity test. Not tuned at all.
#include <cmath>
#include <cstdint>

#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/sampling.hpp"

namespace cvattn::reference {

namespace grid_sample_detail {

using functional::Interpolation;
using functional::PaddingMode;

// Normalised -> pixel coordinate, as PyTorch's vectorised kernel computes it.
inline float unnormalize(float g, std::int64_t size, bool ac) {
  if (ac) return (g + 1.0f) * (static_cast<float>(size - 1) / 2);
  return std::fma(g + 1.0f, static_cast<float>(size) / 2, -0.5f);
}

// clamp to [0, size - 1]; NaN -> 0.
inline float clip(float c, std::int64_t size) {
  const float lo = c > 0.0f ? c : 0.0f;
  const auto hi = static_cast<float>(size - 1);
  return lo < hi ? lo : hi;
}

// Reflection into [low, low + span] (span = size - 1 with align_corners, else size).
inline float reflect(float c, std::int64_t size, bool ac) {
  if (ac && size <= 1) return 0.0f;
  const float low = ac ? 0.0f : -0.5f;
  const float twice_span = ac ? static_cast<float>(size - 1) * 2 : static_cast<float>(size) * 2;
  const float a = std::fabs(c - low);
  const float flips = std::trunc(a / twice_span);
  const float extra = std::fma(-flips, twice_span, a);
  const float mirrored = twice_span - extra;
  if (std::isnan(extra) || std::isnan(mirrored)) return extra + mirrored;  // NaN
  return (extra < mirrored ? extra : mirrored) + low;
}

inline float pad(float c, std::int64_t size, PaddingMode p, bool ac) {
  if (p == PaddingMode::zeros) return c;
  if (p == PaddingMode::border) return clip(c, size);
  return clip(reflect(c, size, ac), size);
}

// plane[y, x], or 0 outside the plane (also for NaN and huge coordinates).
inline float at(const float* plane, std::int64_t h, std::int64_t w, double x, double y) {
  if (!(x >= 0.0 && x < static_cast<double>(w) && y >= 0.0 && y < static_cast<double>(h))) {
    return 0.0f;
  }
  return plane[static_cast<std::int64_t>(y) * w + static_cast<std::int64_t>(x)];
}

inline void cubic(float t, float c[4]) {
  constexpr float A = -0.75f;
  auto near = [](float x) { return ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f; };
  auto far = [](float x) { return ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A; };
  c[0] = far(t + 1.0f);
  c[1] = near(t);
  c[2] = near(1.0f - t);
  c[3] = far(2.0f - t);
}

inline float sample(const float* plane, std::int64_t h, std::int64_t w, float gx, float gy,
                    const functional::GridSampleOptions& o) {
  const bool ac = o.align_corners();
  const PaddingMode p = o.padding_mode();
  if (o.mode() == Interpolation::bicubic) {
    const float x = unnormalize(gx, w, ac), y = unnormalize(gy, h, ac);
    const float x0 = std::floor(x), y0 = std::floor(y);
    float cx[4], cy[4];
    cubic(x - x0, cx);
    cubic(y - y0, cy);
    float rows[4];
    for (int j = 0; j < 4; ++j) {
      const float yy = std::trunc(pad(y0 - 1.0f + static_cast<float>(j), h, p, ac));
      float v[4];
      for (int i = 0; i < 4; ++i) {
        const float xx = std::trunc(pad(x0 - 1.0f + static_cast<float>(i), w, p, ac));
        v[i] = at(plane, h, w, xx, yy);
      }
      rows[j] = std::fma(cx[3], v[3], std::fma(cx[2], v[2], std::fma(cx[1], v[1], cx[0] * v[0])));
    }
    return std::fma(cy[3], rows[3],
                    std::fma(cy[2], rows[2], std::fma(cy[1], rows[1], cy[0] * rows[0])));
  }
  const float x = pad(unnormalize(gx, w, ac), w, p, ac);
  const float y = pad(unnormalize(gy, h, ac), h, p, ac);
  if (o.mode() == Interpolation::nearest) {
    return at(plane, h, w, std::nearbyint(x), std::nearbyint(y));
  }
  const float x0 = std::floor(x), y0 = std::floor(y);
  const float lx = x - x0, ly = y - y0;
  const float hx = 1.0f - lx, hy = 1.0f - ly;
  const float nw = at(plane, h, w, x0, y0), ne = at(plane, h, w, x0 + 1.0, y0);
  const float sw = at(plane, h, w, x0, y0 + 1.0), se = at(plane, h, w, x0 + 1.0, y0 + 1.0);
  return std::fma(se, ly * lx, std::fma(sw, ly * hx, std::fma(ne, hy * lx, nw * (hy * hx))));
}

}  // namespace grid_sample_detail

// grid_sample of input [N, C, H, W] at grid [N, Ho, Wo, 2] (no validation: the caller passes
// shapes the optimised version accepts).
inline Tensor grid_sample(const Tensor& input, const Tensor& grid,
                          const functional::GridSampleOptions& options) {
  const std::int64_t n = input.dim(0), c = input.dim(1), h = input.dim(2), w = input.dim(3);
  const std::int64_t ho = grid.dim(1), wo = grid.dim(2);
  Tensor out = Tensor::empty({n, c, ho, wo});
  const float* in = input.data();
  const float* gr = grid.data();
  float* o = out.data();
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const float* plane = in + (b * c + ch) * h * w;
      for (std::int64_t p = 0; p < ho * wo; ++p) {
        const float* g = gr + (b * ho * wo + p) * 2;
        o[(b * c + ch) * ho * wo + p] =
            grid_sample_detail::sample(plane, h, w, g[0], g[1], options);
      }
    }
  }
  return out;
}

}  // namespace cvattn::reference
