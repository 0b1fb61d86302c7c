#pragma once
// Reference twin of the volumetric grid_sample kernels and their backward
// (functional/grid_sample3d-inl.h): PyTorch's scalar 3-D CPU kernel (GridSampler.cpp,
// grid_sampler_3d_cpu_impl and its backward) written sample by sample, the oracle of the
// per-target parity tests. Not tuned at all. Compile it without FMA contraction
// (tests/CMakeLists.txt), as PyTorch's float32 order has none.
#include <cmath>
#include <cstdint>
#include <limits>

#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/sampling.hpp"

namespace cvattn::reference {

namespace grid_sample3d_detail {

using functional::Interpolation;
using functional::PaddingMode;

// static_cast<int>(flips) % 2 != 0 as x86-64 computes it: beyond int32 (or NaN) the cast gives
// INT_MIN, even.
inline bool odd_flips(float flips) {
  return flips >= -2147483648.0f && flips < 2147483648.0f &&
         static_cast<std::int64_t>(flips) % 2 != 0;
}

// PyTorch's safe_downgrade_to_int_range: non-finite coordinates and those beyond int32 become
// -100, outside every volume.
inline float safe_downgrade(float pos) {
  if (!std::isfinite(pos) || pos > static_cast<float>(std::numeric_limits<int>::max() - 1) ||
      pos < static_cast<float>(std::numeric_limits<int>::min())) {
    return -100.0f;
  }
  return pos;
}

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
      pos = odd_flips(std::floor(c / span)) ? span - extra + lo : extra + lo;
    }
    pos = clip(pos);
  }
  return safe_downgrade(pos);
}

// source() as the backward computes it (grid_sampler_compute_source_index_set_grad), and
// d(coordinate)/d(g): the unnormalising scale, times 0 where the clamp holds the coordinate at or
// beyond a limit (NaN passes with 1), times -1 for an odd count of reflections or a negative
// c - lo, not both.
inline float source_with_grad(float g, std::int64_t size, PaddingMode padding, bool ac,
                              float* grad) {
  const auto fs = static_cast<float>(size);
  *grad = ac ? (fs - 1) / 2 : fs / 2;
  float pos = ac ? ((g + 1) / 2) * (fs - 1) : ((g + 1) * fs - 1) / 2;
  const auto clip = [&](float c, float* g_clip) {
    *g_clip = c <= 0.0f || c >= fs - 1 ? 0.0f : 1.0f;
    return c <= 0.0f ? 0.0f : (c >= fs - 1 ? fs - 1 : c);
  };
  float clip_grad = 1.0f;
  if (padding == PaddingMode::border) {
    pos = clip(pos, &clip_grad);
    *grad = *grad * clip_grad;
  } else if (padding == PaddingMode::reflection) {
    float reflect_grad = 0.0f;
    const float lo = ac ? 0.0f : -0.5f;
    const float span = ac ? fs - 1 : fs;
    if (span <= 0.0f) {
      pos = 0.0f;
    } else {
      float c = pos - lo;
      reflect_grad = c < 0.0f ? -1.0f : 1.0f;
      c = std::fabs(c);
      const float extra = std::fmod(c, span);
      const bool odd = odd_flips(std::floor(c / span));
      reflect_grad = odd ? -reflect_grad : reflect_grad;
      pos = odd ? span - extra + lo : extra + lo;
    }
    pos = clip(pos, &clip_grad);
    *grad = *grad * reflect_grad * clip_grad;
  }
  return safe_downgrade(pos);
}

// The offset of voxel (x, y, z) in a d x h x w volume, or -1 outside.
inline std::int64_t offset(std::int64_t x, std::int64_t y, std::int64_t z, std::int64_t d,
                           std::int64_t h, std::int64_t w) {
  if (x < 0 || x >= w || y < 0 || y >= h || z < 0 || z >= d) return -1;
  return (z * h + y) * w + x;
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

// The trilinear cell of (x, y, z): its first corner and each axis' two weights, in PyTorch's
// float order.
struct Cell {
  std::int64_t x0, y0, z0;
  float wx[2], wy[2], wz[2];
  Cell(float x, float y, float z)
      : x0(static_cast<std::int64_t>(std::floor(x))),
        y0(static_cast<std::int64_t>(std::floor(y))),
        z0(static_cast<std::int64_t>(std::floor(z))),
        wx{static_cast<float>(x0 + 1) - x, x - static_cast<float>(x0)},
        wy{static_cast<float>(y0 + 1) - y, y - static_cast<float>(y0)},
        wz{static_cast<float>(z0 + 1) - z, z - static_cast<float>(z0)} {}
};

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
          const Cell q(x, y, z);
          const std::int64_t x0 = q.x0, y0 = q.y0, z0 = q.z0;
          const float *wx = q.wx, *wy = q.wy, *wz = q.wz;
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

// grid_sample_backward of input [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] for grad_output
// [N, C, Do, Ho, Wo] (no validation), voxel by voxel as PyTorch's scalar kernel: coordinates by
// source_with_grad (for nearest too); grad_input scattered channel by channel, the eight corners
// in the order tnw, tne, tsw, tse, bnw, bne, bsw, bse (corner k = 4*dz + 2*dy + dx); grad_grid
// summed over the channels in order, then times each coordinate's derivative (nearest: 0).
inline functional::GridSampleGrads grid_sample3d_backward(const Tensor& input, const Tensor& grid,
                                                          const Tensor& grad_output,
                                                          const functional::GridSampleOptions& o) {
  using namespace grid_sample3d_detail;
  const std::int64_t n = input.dim(0), c = input.dim(1), d = input.dim(2), h = input.dim(3),
                     w = input.dim(4);
  const std::int64_t vi = d * h * w, vo = grid.dim(1) * grid.dim(2) * grid.dim(3);
  functional::GridSampleGrads out{Tensor::zeros(input.shape()), Tensor::zeros(grid.shape())};
  for (std::int64_t b = 0; b < n; ++b) {
    const float* in = input.data() + b * c * vi;
    float* gin = out.grad_input.data() + b * c * vi;
    const float* gout = grad_output.data() + b * c * vo;
    for (std::int64_t p = 0; p < vo; ++p) {
      const float* g = grid.data() + (b * vo + p) * 3;
      float m[3];
      const float x = source_with_grad(g[0], w, o.padding_mode(), o.align_corners(), &m[0]);
      const float y = source_with_grad(g[1], h, o.padding_mode(), o.align_corners(), &m[1]);
      const float z = source_with_grad(g[2], d, o.padding_mode(), o.align_corners(), &m[2]);
      if (o.mode() == Interpolation::nearest) {
        const std::int64_t at_xyz = offset(nearest(x), nearest(y), nearest(z), d, h, w);
        if (at_xyz >= 0) {
          for (std::int64_t ch = 0; ch < c; ++ch) gin[ch * vi + at_xyz] += gout[ch * vo + p];
        }
        continue;  // grad_grid stays 0
      }
      const Cell q(x, y, z);
      const std::int64_t x0 = q.x0, y0 = q.y0, z0 = q.z0;
      const float *wx = q.wx, *wy = q.wy, *wz = q.wz;
      std::int64_t corner[8];
      for (int k = 0; k < 8; ++k) {
        corner[k] = offset(x0 + (k & 1), y0 + ((k >> 1) & 1), z0 + (k >> 2), d, h, w);
      }
      float gx = 0.0f, gy = 0.0f, gz = 0.0f;
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const float go = gout[ch * vo + p];
        for (int k = 0; k < 8; ++k) {
          const int dx = k & 1, dy = (k >> 1) & 1, dz = k >> 2;
          if (corner[k] >= 0) gin[ch * vi + corner[k]] += wx[dx] * wy[dy] * wz[dz] * go;
        }
        for (int k = 0; k < 8; ++k) {
          if (corner[k] < 0) continue;
          const int dx = k & 1, dy = (k >> 1) & 1, dz = k >> 2;
          const float v = in[ch * vi + corner[k]];
          // The derivative of corner k's weight along an axis is +-1 times the other two.
          const float tx = v * wy[dy] * wz[dz] * go;
          const float ty = v * wx[dx] * wz[dz] * go;
          const float tz = v * wx[dx] * wy[dy] * go;
          gx = dx ? gx + tx : gx - tx;
          gy = dy ? gy + ty : gy - ty;
          gz = dz ? gz + tz : gz - tz;
        }
      }
      float* gg = out.grad_grid.data() + (b * vo + p) * 3;
      gg[0] = m[0] * gx;
      gg[1] = m[1] * gy;
      gg[2] = m[2] * gz;
    }
  }
  return out;
}

}  // namespace cvattn::reference
