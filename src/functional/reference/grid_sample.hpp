#pragma once
// Reference twin of the grid_sample kernels and their backward (functional/grid_sample-inl.h):
// PyTorch's x86-64 CPU kernel (docs/modules.md §8) sample by sample in plain scalar code (its
// float32 coordinate arithmetic, corner order, summation order and NaN rules), the oracle of the
// per-target parity tests. Not tuned at all; compile it without FMA contraction
// (tests/CMakeLists.txt): the fused operations PyTorch's build makes are spelled out.
#include <cmath>
#include <cstdint>

#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/sampling.hpp"

namespace cvattn::reference {

namespace grid_sample_detail {

using functional::Interpolation;
using functional::PaddingMode;

// d(pixel coordinate) / d(g) of unnormalize: half the span.
inline float unnormalize_scale(std::int64_t size, bool ac) {
  return ac ? static_cast<float>(size - 1) / 2 : static_cast<float>(size) / 2;
}

// Normalised -> pixel coordinate, as PyTorch's vectorised kernel computes it.
inline float unnormalize(float g, std::int64_t size, bool ac) {
  if (ac) return (g + 1.0f) * unnormalize_scale(size, ac);
  return std::fma(g + 1.0f, unnormalize_scale(size, ac), -0.5f);
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
    // Tap j at y0 + (j - 1), one rounding as PyTorch adds it (it matters past 2^24).
    float rows[4];
    for (int j = 0; j < 4; ++j) {
      const float yy = std::trunc(pad(y0 + static_cast<float>(j - 1), h, p, ac));
      float v[4];
      for (int i = 0; i < 4; ++i) {
        const float xx = std::trunc(pad(x0 + static_cast<float>(i - 1), w, p, ac));
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

// --- backward ---

// A pixel of an h x w plane as y * w + x, or -1 outside (also NaN and huge coordinates), for
// integral x and y: every bounds test of the backward, whatever the padding (§8.3).
inline std::int64_t index(double x, double y, std::int64_t h, std::int64_t w) {
  if (!(x >= 0.0 && x < static_cast<double>(w) && y >= 0.0 && y < static_cast<double>(h))) {
    return -1;
  }
  return static_cast<std::int64_t>(y) * w + static_cast<std::int64_t>(x);
}

// The clamp to [0, size - 1] of the backward and whether c lies strictly inside it: the limits
// count as outside for the gradient; NaN passes, inside (§8.6).
inline float clip_inside(float c, std::int64_t size, bool* inside) {
  const auto hi = static_cast<float>(size - 1);
  if (std::isnan(c)) {
    *inside = true;
    return c;
  }
  *inside = c > 0.0f && c < hi;
  return c <= 0.0f ? 0.0f : (c < hi ? c : hi);
}

// The padded pixel coordinate of normalised g for bilinear's backward and its derivative
// d(coordinate)/d(g) (PyTorch's apply_get_grad): the unnormalising scale, times 0 where the clamp
// holds the coordinate at a limit, times -1 for an odd count of reflections of c - low, or for a
// negative c - low, not both.
inline float pad_with_grad(float g, std::int64_t size, PaddingMode p, bool ac, float* grad) {
  const float scale = unnormalize_scale(size, ac);
  const float c = unnormalize(g, size, ac);
  if (p == PaddingMode::zeros) {
    *grad = scale;
    return c;
  }
  bool inside = false;
  if (p == PaddingMode::border) {
    const float r = clip_inside(c, size, &inside);
    *grad = inside ? scale : 0.0f;
    return r;
  }
  if (ac && size <= 1) {  // an empty span: every coordinate reflects to 0, derivative 0
    *grad = 0.0f;
    return 0.0f;
  }
  const float low = ac ? 0.0f : -0.5f;
  const float twice_span = ac ? static_cast<float>(size - 1) * 2 : static_cast<float>(size) * 2;
  const float shifted = c - low;
  const float a = std::fabs(shifted);
  const float flips = std::trunc(a / twice_span);
  const float extra = std::fma(-flips, twice_span, a);
  const float mirrored = twice_span - extra;
  const bool one_more = extra > mirrored;  // false for NaN: NaN stays NaN
  const float sign = one_more != (shifted < 0.0f) ? -1.0f : 1.0f;
  const float r = clip_inside((one_more ? mirrored : extra) + low, size, &inside);
  *grad = inside ? sign * scale : 0.0f;
  return r;
}

// d/dt of cubic()'s four weights, in PyTorch's operation order (get_cubic_coefficients_grad).
inline void cubic_grad(float t, float c[4]) {
  constexpr float A = -0.75f;
  float x = -1.0f - t;
  c[0] = (-3.0f * A * x - 10.0f * A) * x - 8.0f * A;
  x = 0.0f - t;
  c[1] = (-3.0f * (A + 2.0f) * x - 2.0f * (A + 3.0f)) * x;
  x = 1.0f - t;
  c[2] = (3.0f * (A + 2.0f) * x - 2.0f * (A + 3.0f)) * x;
  x = 2.0f - t;
  c[3] = (3.0f * A * x - 10.0f * A) * x + 8.0f * A;
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

// grid_sample_backward of input [N, C, H, W] at grid [N, Ho, Wo, 2] for grad_output
// [N, C, Ho, Wo] (no validation), pixel by pixel as PyTorch's CPU kernel (§8.6; bicubic's grid
// gradient factored, see below): grad_input scattered channel by channel, each pixel's corners
// (taps) in PyTorch's order; grad_grid summed over the channels in order, then times the
// coordinate's derivative (bilinear: the padding's too; bicubic: the unnormalising scale alone,
// as PyTorch; nearest: 0). Corners and taps outside the plane, and NaN coordinates, read 0 and
// receive nothing with every padding: PyTorch's kernel reads and writes out of bounds for NaN
// under border and reflection padding (docs/sampling.md).
inline functional::GridSampleGrads grid_sample_backward(
    const Tensor& input, const Tensor& grid, const Tensor& grad_output,
    const functional::GridSampleOptions& options) {
  using namespace grid_sample_detail;
  const std::int64_t n = input.dim(0), c = input.dim(1), h = input.dim(2), w = input.dim(3);
  const std::int64_t pixels = grid.dim(1) * grid.dim(2);
  const bool ac = options.align_corners();
  const PaddingMode pm = options.padding_mode();
  functional::GridSampleGrads out{Tensor::zeros(input.shape()), Tensor::zeros(grid.shape())};
  for (std::int64_t b = 0; b < n; ++b) {
    const float* in = input.data() + b * c * h * w;
    float* gin = out.grad_input.data() + b * c * h * w;
    const float* gout = grad_output.data() + b * c * pixels;
    for (std::int64_t p = 0; p < pixels; ++p) {
      const float* g = grid.data() + (b * pixels + p) * 2;
      float* gg = out.grad_grid.data() + (b * pixels + p) * 2;
      if (options.mode() == Interpolation::nearest) {
        const float x = pad(unnormalize(g[0], w, ac), w, pm, ac);
        const float y = pad(unnormalize(g[1], h, ac), h, pm, ac);
        const std::int64_t at_xy = index(std::nearbyint(x), std::nearbyint(y), h, w);
        if (at_xy >= 0) {
          for (std::int64_t ch = 0; ch < c; ++ch) gin[ch * h * w + at_xy] += gout[ch * pixels + p];
        }
        continue;  // grad_grid stays 0
      }
      if (options.mode() == Interpolation::bicubic) {
        const float x = unnormalize(g[0], w, ac), y = unnormalize(g[1], h, ac);
        const float x0 = std::floor(x), y0 = std::floor(y);
        float cx[4], cy[4], dx[4], dy[4];
        cubic(x - x0, cx);
        cubic(y - y0, cy);
        cubic_grad(x - x0, dx);
        cubic_grad(y - y0, dy);
        // Tap i at x0 + (i - 1), one rounding as PyTorch adds it (it matters past 2^24).
        std::int64_t tap[4][4];  // [i][j]: column i, row j
        for (int i = 0; i < 4; ++i) {
          const float xx = std::trunc(pad(x0 + static_cast<float>(i - 1), w, pm, ac));
          for (int j = 0; j < 4; ++j) {
            const float yy = std::trunc(pad(y0 + static_cast<float>(j - 1), h, pm, ac));
            tap[i][j] = index(xx, yy, h, w);
          }
        }
        // grad_grid: PyTorch sums v * d * dx[i] * cy[j] tap by tap; here the same sum factored,
        // d * sum_i dx[i] * (sum_j v[i][j] cy[j]) (and likewise for y), in the order the kernel
        // takes (grid_sample-inl.h, cubic_grid_terms): within rounding of PyTorch's.
        float gx = 0.0f, gy = 0.0f;
        for (std::int64_t ch = 0; ch < c; ++ch) {
          const float d = gout[ch * pixels + p];
          float s[4], u[4];
          for (int i = 0; i < 4; ++i) {
            float v[4];
            for (int j = 0; j < 4; ++j) {
              v[j] = tap[i][j] >= 0 ? in[ch * h * w + tap[i][j]] : 0.0f;
            }
            s[i] = ((v[0] * cy[0] + v[1] * cy[1]) + v[2] * cy[2]) + v[3] * cy[3];
            u[i] = ((v[0] * dy[0] + v[1] * dy[1]) + v[2] * dy[2]) + v[3] * dy[3];
          }
          gx = gx - (((s[0] * dx[0] + s[1] * dx[1]) + s[2] * dx[2]) + s[3] * dx[3]) * d;
          gy = gy - (((u[0] * cx[0] + u[1] * cx[1]) + u[2] * cx[2]) + u[3] * cx[3]) * d;
          for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 4; ++j) {
              if (tap[i][j] >= 0) gin[ch * h * w + tap[i][j]] += d * cx[i] * cy[j];
            }
          }
        }
        gg[0] = gx * unnormalize_scale(w, ac);
        gg[1] = gy * unnormalize_scale(h, ac);
        continue;
      }
      float mx = 0.0f, my = 0.0f;
      const float x = pad_with_grad(g[0], w, pm, ac, &mx);
      const float y = pad_with_grad(g[1], h, pm, ac, &my);
      const float x0 = std::floor(x), y0 = std::floor(y);
      const float lx = x - x0, ly = y - y0, hx = 1.0f - lx, hy = 1.0f - ly;
      const float weight[4] = {hy * hx, hy * lx, ly * hx, ly * lx};  // nw, ne, sw, se
      const std::int64_t corner[4] = {index(x0, y0, h, w), index(x0 + 1.0, y0, h, w),
                                      index(x0, y0 + 1.0, h, w), index(x0 + 1.0, y0 + 1.0, h, w)};
      float gx = 0.0f, gy = 0.0f;
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const float d = gout[ch * pixels + p];
        float v[4];
        for (int k = 0; k < 4; ++k) {
          if (corner[k] >= 0) gin[ch * h * w + corner[k]] += weight[k] * d;
          v[k] = corner[k] >= 0 ? in[ch * h * w + corner[k]] : 0.0f;
        }
        gx = gx + ((v[1] - v[0]) * hy + (v[3] - v[2]) * ly) * d;
        gy = gy + ((v[2] - v[0]) * hx + (v[3] - v[1]) * lx) * d;
      }
      gg[0] = gx * mx;
      gg[1] = gy * my;
    }
  }
  return out;
}

}  // namespace cvattn::reference
