// Volumetric grid_sample and its backward (sampling3d.hpp), reproducing PyTorch's scalar 3-D CPU
// kernel: grid_sampler_compute_source_index (GridSampler.h) for each axis, then eight trilinear
// corner weights, or the nearest voxel. Its float32 operation order is kept (this file is built
// without FMA contraction), so coordinates, and therefore the voxels read, are PyTorch's.
//
// Work layout: the output voxels of one volume are processed in blocks; a block's taps (offsets,
// weights, in-bounds bits) are computed once per voxel and reused for every channel, so each
// channel is a pass over contiguous output. Blocks of all volumes are spread over the threads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/sampling3d.hpp"

namespace cvattn::functional {
namespace {

constexpr std::int64_t kBlock = 256;  // output voxels whose taps are computed together

// static_cast<int>(x) of a float as x86-64 does it (cvttss2si): out-of-range and NaN give
// INT_MIN. PyTorch's reflect_coordinates takes the parity of that.
bool odd_flips(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return false;  // INT_MIN: even
  return (static_cast<std::int64_t>(v) % 2) != 0;
}

// One axis: PyTorch's grid_sampler_compute_source_index and its _set_grad twin.
class Axis3 {
 public:
  Axis3(std::int64_t size, PaddingMode padding, bool align_corners)
      : size_(size), padding_(padding), ac_(align_corners) {}

  [[nodiscard]] std::int64_t size() const { return size_; }

  [[nodiscard]] float source(float coord) const {
    float c = unnormalize(coord);
    if (padding_ == PaddingMode::border) {
      c = clip(c);
    } else if (padding_ == PaddingMode::reflection) {
      c = ac_ ? reflect(c, 0, 2 * (size_ - 1)) : reflect(c, -1, 2 * size_ - 1);
      c = clip(c);
    }
    return safe_downgrade(c);
  }

  [[nodiscard]] float source_with_grad(float coord, float* grad) const {
    float c;
    if (ac_) {
      *grad = static_cast<float>(size_ - 1) / 2;
    } else {
      *grad = static_cast<float>(size_) / 2;
    }
    c = unnormalize(coord);
    if (padding_ == PaddingMode::border) {
      float g_clip;
      c = clip_with_grad(c, &g_clip);
      *grad = *grad * g_clip;
    } else if (padding_ == PaddingMode::reflection) {
      float g_refl, g_clip;
      c = ac_ ? reflect_with_grad(c, 0, 2 * (size_ - 1), &g_refl)
              : reflect_with_grad(c, -1, 2 * size_ - 1, &g_refl);
      c = clip_with_grad(c, &g_clip);
      *grad = *grad * g_refl * g_clip;
    }
    return safe_downgrade(c);
  }

 private:
  [[nodiscard]] float unnormalize(float coord) const {
    if (ac_) return ((coord + 1) / 2) * static_cast<float>(size_ - 1);
    return ((coord + 1) * static_cast<float>(size_) - 1) / 2;
  }

  // std::min(size - 1, std::max(c, 0)): NaN passes max and loses against the limit in min.
  [[nodiscard]] float clip(float c) const {
    const float lo = (c < 0.0f) ? 0.0f : c;
    const auto hi = static_cast<float>(size_ - 1);
    return (lo < hi) ? lo : hi;
  }

  // The limits themselves count as outside for the gradient; NaN passes with gradient 1.
  [[nodiscard]] float clip_with_grad(float c, float* grad) const {
    if (c <= 0.0f) {
      *grad = 0.0f;
      return 0.0f;
    }
    const auto hi = static_cast<float>(size_ - 1);
    if (c >= hi) {
      *grad = 0.0f;
      return hi;
    }
    *grad = 1.0f;
    return c;
  }

  static float reflect(float c, std::int64_t twice_low, std::int64_t twice_high) {
    if (twice_low == twice_high) return 0.0f;
    const float min = static_cast<float>(twice_low) / 2;
    const float span = static_cast<float>(twice_high - twice_low) / 2;
    c = std::fabs(c - min);
    const float extra = std::fmod(c, span);
    return odd_flips(std::floor(c / span)) ? span - extra + min : extra + min;
  }

  static float reflect_with_grad(float c, std::int64_t twice_low, std::int64_t twice_high,
                                 float* grad) {
    if (twice_low == twice_high) {
      *grad = 0.0f;
      return 0.0f;
    }
    const float min = static_cast<float>(twice_low) / 2;
    const float span = static_cast<float>(twice_high - twice_low) / 2;
    c = c - min;
    float mult = 1.0f;
    if (c < 0.0f) {
      mult = -1.0f;
      c = -c;
    }
    const float extra = std::fmod(c, span);
    if (odd_flips(std::floor(c / span))) {
      *grad = -mult;
      return span - extra + min;
    }
    *grad = mult;
    return extra + min;
  }

  // PyTorch's safe_downgrade_to_int_range: non-finite or out-of-int coordinates become -100,
  // which lies outside every volume.
  static float safe_downgrade(float x) {
    constexpr auto kMax = static_cast<float>(std::numeric_limits<int>::max() - 1);
    constexpr auto kMin = static_cast<float>(std::numeric_limits<int>::min());
    if (x > kMax || x < kMin || !std::isfinite(static_cast<double>(x))) return -100.0f;
    return x;
  }

  std::int64_t size_;
  PaddingMode padding_;
  bool ac_;
};

struct Geometry3 {
  std::int64_t n, c, d, h, w, dout, hout, wout;
  [[nodiscard]] std::int64_t in_volume() const { return d * h * w; }
  [[nodiscard]] std::int64_t out_volume() const { return dout * hout * wout; }
};

// The eight trilinear corners of one voxel, in PyTorch's order tnw, tne, tsw, tse, bnw, bne,
// bsw, bse: corner k = 4*dz + 2*dy + dx.
struct Taps3 {
  std::int64_t offset[8];  // into one channel volume (0 where outside)
  float weight[8];
  float wx[2], wy[2], wz[2];  // per-axis factors: [0] = (x1 - x), [1] = (x - x0)
  std::uint32_t inside;       // bit k: corner k inside
};

Taps3 trilinear_taps(float ix, float iy, float iz, const Geometry3& g) {
  Taps3 t{};
  const auto x0 = static_cast<std::int64_t>(std::floor(ix));
  const auto y0 = static_cast<std::int64_t>(std::floor(iy));
  const auto z0 = static_cast<std::int64_t>(std::floor(iz));
  t.wx[0] = static_cast<float>(x0 + 1) - ix;
  t.wx[1] = ix - static_cast<float>(x0);
  t.wy[0] = static_cast<float>(y0 + 1) - iy;
  t.wy[1] = iy - static_cast<float>(y0);
  t.wz[0] = static_cast<float>(z0 + 1) - iz;
  t.wz[1] = iz - static_cast<float>(z0);
  t.inside = 0;
  for (int k = 0; k < 8; ++k) {
    const int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
    const std::int64_t x = x0 + dx, y = y0 + dy, z = z0 + dz;
    t.weight[k] = t.wx[dx] * t.wy[dy] * t.wz[dz];
    const bool ok = x >= 0 && x < g.w && y >= 0 && y < g.h && z >= 0 && z < g.d;
    t.offset[k] = ok ? (z * g.h + y) * g.w + x : 0;
    t.inside |= static_cast<std::uint32_t>(ok) << k;
  }
  return t;
}

// std::round(v) (half away from zero) as an index, or -1 when |v| >= 1e9 or NaN (outside any
// volume). Without SSE4.1's roundps, std::round is a library call on the portable baseline; the
// truncation and the exact fraction v - trunc(v) are not (native builds inlined it: 1.4-1.55x).
std::int32_t round_half_away(float v) {
  if (!(std::fabs(v) < 1e9f)) return -1;
  const auto i = static_cast<std::int32_t>(v);   // toward zero
  const float frac = v - static_cast<float>(i);  // exact: |v| < 2^24, or v is an integer
  return i + static_cast<std::int32_t>(frac >= 0.5f) - static_cast<std::int32_t>(frac <= -0.5f);
}

// The nearest voxel's offset, or -1 when outside. PyTorch 1.13's 3-D CPU kernel rounds half away
// from zero (std::round; its 2-D kernel rounds half to even): pixel coordinate -0.5 is outside.
std::int64_t nearest_offset(float ix, float iy, float iz, const Geometry3& g) {
  const std::int64_t x = round_half_away(ix);
  const std::int64_t y = round_half_away(iy);
  const std::int64_t z = round_half_away(iz);
  const bool ok = x >= 0 && x < g.w && y >= 0 && y < g.h && z >= 0 && z < g.d;
  return ok ? (z * g.h + y) * g.w + x : -1;
}

Geometry3 validate(const Tensor& input, const Tensor& grid, const GridSampleOptions& options,
                   const char* where) {
  const auto m = static_cast<int>(options.mode());
  const auto p = static_cast<int>(options.padding_mode());
  CVATTN_CHECK(m >= 0 && m <= 2, ValueError, where, ": unknown interpolation mode ", m);
  CVATTN_CHECK(p >= 0 && p <= 2, ValueError, where, ": unknown padding mode ", p);
  CVATTN_CHECK(options.mode() != Interpolation::bicubic, ValueError, where,
               ": mode 'bicubic' supports 4-D input only (PyTorch: bicubic interpolation only "
               "supports 4D input), got 5-D input ",
               to_string(input.shape()));
  check_rank(input, 5, "input", where);
  check_rank(grid, 5, "grid", where);
  const Shape& s = input.shape();
  CVATTN_CHECK(s[2] >= 1 && s[3] >= 1 && s[4] >= 1, ShapeError, where,
               ": tensor 'input' expected non-empty spatial dimensions, got ", to_string(s));
  CVATTN_CHECK(grid.dim(0) == s[0] && grid.dim(4) == 3, ShapeError, where,
               ": tensor 'grid' expected ", to_string({s[0], kAny, kAny, kAny, 3}),
               " (batch of 'input' ", to_string(s), "), got ", to_string(grid.shape()));
  (void)checked_numel({s[0], s[1], grid.dim(1), grid.dim(2), grid.dim(3)}, where);
  return {s[0], s[1], s[2], s[3], s[4], grid.dim(1), grid.dim(2), grid.dim(3)};
}

}  // namespace

Tensor grid_sample3d(const Tensor& input, const Tensor& grid, const GridSampleOptions& options) {
  const char* where = "grid_sample";
  const Geometry3 g = validate(input, grid, options, where);
  Tensor output = Tensor::empty({g.n, g.c, g.dout, g.hout, g.wout});
  if (output.numel() == 0) return output;
  const Axis3 ax(g.w, options.padding_mode(), options.align_corners());
  const Axis3 ay(g.h, options.padding_mode(), options.align_corners());
  const Axis3 az(g.d, options.padding_mode(), options.align_corners());
  const bool nearest = options.mode() == Interpolation::nearest;
  const std::int64_t vol_out = g.out_volume();
  const std::int64_t vol_in = g.in_volume();
  const std::int64_t blocks = (vol_out + kBlock - 1) / kBlock;
  const float* in = input.data();
  const float* gr = grid.data();
  float* out = output.data();

  detail::parallel_for(g.n * blocks, [&](std::int64_t task) {
    const std::int64_t n = task / blocks;
    const std::int64_t p0 = (task % blocks) * kBlock;
    const std::int64_t count = std::min(kBlock, vol_out - p0);
    const float* in_n = in + n * g.c * vol_in;
    const float* grid_b = gr + (n * vol_out + p0) * 3;
    float* out_b = out + n * g.c * vol_out + p0;
    if (nearest) {
      std::int64_t off[kBlock];
      for (std::int64_t p = 0; p < count; ++p) {
        const float* q = grid_b + 3 * p;
        off[p] = nearest_offset(ax.source(q[0]), ay.source(q[1]), az.source(q[2]), g);
      }
      for (std::int64_t c = 0; c < g.c; ++c) {
        const float* src = in_n + c * vol_in;
        float* dst = out_b + c * vol_out;
        for (std::int64_t p = 0; p < count; ++p) dst[p] = off[p] >= 0 ? src[off[p]] : 0.0f;
      }
      return;
    }
    Taps3 taps[kBlock];
    for (std::int64_t p = 0; p < count; ++p) {
      const float* q = grid_b + 3 * p;
      taps[p] = trilinear_taps(ax.source(q[0]), ay.source(q[1]), az.source(q[2]), g);
    }
    for (std::int64_t c = 0; c < g.c; ++c) {
      const float* src = in_n + c * vol_in;
      float* dst = out_b + c * vol_out;
      for (std::int64_t p = 0; p < count; ++p) {
        const Taps3& t = taps[p];
        float acc = 0.0f;
        for (int k = 0; k < 8; ++k) {
          if ((t.inside >> k) & 1u) acc += src[t.offset[k]] * t.weight[k];
        }
        dst[p] = acc;
      }
    }
  });
  return output;
}

GridSampleGrads grid_sample3d_backward(const Tensor& input, const Tensor& grid,
                                       const Tensor& grad_output,
                                       const GridSampleOptions& options) {
  const char* where = "grid_sample_backward";
  const Geometry3 g = validate(input, grid, options, where);
  check_defined(grad_output, "grad_output", where);
  const Shape out_shape{g.n, g.c, g.dout, g.hout, g.wout};
  CVATTN_CHECK(grad_output.shape() == out_shape, ShapeError, where,
               ": tensor 'grad_output' expected ", to_string(out_shape),
               " (the shape of grid_sample's output), got ", to_string(grad_output.shape()));
  GridSampleGrads grads{Tensor::zeros(input.shape()), Tensor::zeros(grid.shape())};
  const std::int64_t vol_out = g.out_volume();
  if (g.n == 0 || vol_out == 0 || g.c == 0) return grads;
  const Axis3 ax(g.w, options.padding_mode(), options.align_corners());
  const Axis3 ay(g.h, options.padding_mode(), options.align_corners());
  const Axis3 az(g.d, options.padding_mode(), options.align_corners());
  const bool nearest = options.mode() == Interpolation::nearest;
  const std::int64_t vol_in = g.in_volume();
  const std::int64_t blocks = (vol_out + kBlock - 1) / kBlock;
  const float* in = input.data();
  const float* gr = grid.data();
  const float* gout = grad_output.data();
  float* gin = grads.grad_input.data();
  float* ggrid = grads.grad_grid.data();

  // One task per volume: grad_input of a volume is scattered by that task alone, in PyTorch's
  // voxel order within each channel.
  detail::parallel_for(g.n, [&](std::int64_t n) {
    const float* in_n = in + n * g.c * vol_in;
    float* gin_n = gin + n * g.c * vol_in;
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t p0 = b * kBlock;
      const std::int64_t count = std::min(kBlock, vol_out - p0);
      const float* grid_b = gr + (n * vol_out + p0) * 3;
      const float* gout_b = gout + n * g.c * vol_out + p0;
      float* ggrid_b = ggrid + (n * vol_out + p0) * 3;
      if (nearest) {
        // The backward computes coordinates with the _set_grad rules, also for nearest (they
        // differ from forward's for NaN under border/reflection padding).
        std::int64_t off[kBlock];
        for (std::int64_t p = 0; p < count; ++p) {
          const float* q = grid_b + 3 * p;
          float unused;
          off[p] =
              nearest_offset(ax.source_with_grad(q[0], &unused), ay.source_with_grad(q[1], &unused),
                             az.source_with_grad(q[2], &unused), g);
        }
        for (std::int64_t c = 0; c < g.c; ++c) {
          const float* go = gout_b + c * vol_out;
          float* gi = gin_n + c * vol_in;
          for (std::int64_t p = 0; p < count; ++p) {
            if (off[p] >= 0) gi[off[p]] += go[p];
          }
        }
        continue;  // grad_grid stays zero
      }
      Taps3 taps[kBlock];
      float mult[kBlock][3];
      float acc[kBlock][3];
      for (std::int64_t p = 0; p < count; ++p) {
        const float* q = grid_b + 3 * p;
        const float ix = ax.source_with_grad(q[0], &mult[p][0]);
        const float iy = ay.source_with_grad(q[1], &mult[p][1]);
        const float iz = az.source_with_grad(q[2], &mult[p][2]);
        taps[p] = trilinear_taps(ix, iy, iz, g);
        acc[p][0] = acc[p][1] = acc[p][2] = 0.0f;
      }
      for (std::int64_t c = 0; c < g.c; ++c) {
        const float* src = in_n + c * vol_in;
        const float* go = gout_b + c * vol_out;
        float* gi = gin_n + c * vol_in;
        for (std::int64_t p = 0; p < count; ++p) {
          const Taps3& t = taps[p];
          const float d = go[p];
          for (int k = 0; k < 8; ++k) {
            if ((t.inside >> k) & 1u) gi[t.offset[k]] += t.weight[k] * d;
          }
          float gx = acc[p][0], gy = acc[p][1], gz = acc[p][2];
          for (int k = 0; k < 8; ++k) {
            if (!((t.inside >> k) & 1u)) continue;
            const int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
            const float v = src[t.offset[k]];
            const float tx = v * t.wy[dy] * t.wz[dz] * d;
            const float ty = v * t.wx[dx] * t.wz[dz] * d;
            const float tz = v * t.wx[dx] * t.wy[dy] * d;
            gx = dx ? gx + tx : gx - tx;
            gy = dy ? gy + ty : gy - ty;
            gz = dz ? gz + tz : gz - tz;
          }
          acc[p][0] = gx;
          acc[p][1] = gy;
          acc[p][2] = gz;
        }
      }
      for (std::int64_t p = 0; p < count; ++p) {
        for (int k = 0; k < 3; ++k) ggrid_b[3 * p + k] = mult[p][k] * acc[p][k];
      }
    }
  });
  return grads;
}

}  // namespace cvattn::functional
