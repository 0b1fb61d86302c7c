// grid_sample and grid_sample_backward (MODULES.md §8), reproducing PyTorch's x86-64 CPU kernel
// (aten/src/ATen/native/cpu/GridSamplerKernel.cpp) including its float32 coordinate arithmetic
// and its treatment of NaN, +-inf and huge grid values.
//
// Layout of the work: output pixels of one image are processed in blocks of kBlock. For a block
// the taps (offsets, weights, in-bounds bits) are computed once per pixel, then reused for every
// channel, with the channel loop innermost so the weights stay in registers and the loop is a
// tight gather. Blocks of all images are spread over the threads; no allocation inside.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/sampling.hpp"
#include "functional/detail/bilinear_taps.hpp"

namespace cvattn::functional {
namespace {

using detail::BilinearTaps;
using detail::kAllInside;

constexpr std::int64_t kBlock = 128;  // output pixels whose taps are computed together

struct Geometry {
  std::int64_t n, c, h, w, ho, wo;
  [[nodiscard]] std::int64_t in_plane() const { return h * w; }
  [[nodiscard]] std::int64_t out_plane() const { return ho * wo; }
  [[nodiscard]] std::int64_t blocks() const { return (out_plane() + kBlock - 1) / kBlock; }
};

// One axis of the grid: normalised coordinate -> pixel coordinate (§8.1) and padding (§8.2), in
// the float32 operation order of PyTorch's vectorised kernel (whose build contracts
// `(g + 1) * scale - 0.5` and `a - flips * span` into FMAs, hence the std::fma calls).
template <PaddingMode P, bool AC>
class Axis {
 public:
  explicit Axis(std::int64_t size)
      : size_(static_cast<std::int32_t>(size)),
        max_val_(static_cast<float>(size - 1)),
        scale_(AC ? static_cast<float>(size - 1) / 2 : static_cast<float>(size) / 2),
        low_(AC ? 0.0f : -0.5f),
        twice_span_(AC ? static_cast<float>(size - 1) * 2 : static_cast<float>(size) * 2),
        empty_(AC && size <= 1) {}

  [[nodiscard]] std::int32_t size() const { return size_; }
  [[nodiscard]] float scale() const { return scale_; }

  [[nodiscard]] float unnormalize(float g) const {
    if constexpr (AC) {
      return (g + 1.0f) * scale_;
    } else {
      return std::fma(g + 1.0f, scale_, -0.5f);
    }
  }

  // The padding transform of a pixel coordinate (bilinear/nearest: of the sample position;
  // bicubic: of each integer tap).
  [[nodiscard]] float pad(float c) const {
    if constexpr (P == PaddingMode::zeros) {
      return c;
    } else if constexpr (P == PaddingMode::border) {
      return clip(c);
    } else {
      return clip(reflect(c));
    }
  }

  [[nodiscard]] float apply(float g) const { return pad(unnormalize(g)); }

  // apply() plus d(result)/d(g) as PyTorch's backward computes it: the clip has derivative 0 at
  // and beyond its limits; reflection flips the sign on odd reflections. NaN stays NaN here
  // (PyTorch's backward keeps it too), the tap routine then treats it as outside.
  [[nodiscard]] float apply_with_grad(float g, float* grad) const {
    const float c = unnormalize(g);
    if constexpr (P == PaddingMode::zeros) {
      *grad = scale_;
      return c;
    } else if constexpr (P == PaddingMode::border) {
      bool inside;
      const float r = clip_with_grad(c, &inside);
      *grad = inside ? scale_ : 0.0f;
      return r;
    } else {
      if (empty_) {
        *grad = 0.0f;
        return 0.0f;  // PyTorch returns (0, 0) before clipping
      }
      const float shifted = c - low_;
      const bool negative = shifted < 0.0f;
      const float a = std::fabs(shifted);
      const float flips = std::trunc(a / twice_span_);
      const float extra = std::fma(-flips, twice_span_, a);
      const float mirrored = twice_span_ - extra;
      const bool one_more = extra > mirrored;
      const float sign = (one_more != negative) ? -1.0f : 1.0f;
      bool inside;
      const float r = clip_with_grad((one_more ? mirrored : extra) + low_, &inside);
      *grad = inside ? sign * scale_ : 0.0f;
      return r;
    }
  }

 private:
  // clamp to [0, size-1]; NaN -> 0 (maxps(c, 0) returns its second operand for NaN).
  [[nodiscard]] float clip(float c) const {
    const float lo = c > 0.0f ? c : 0.0f;
    return lo < max_val_ ? lo : max_val_;
  }

  // PyTorch's clip_coordinates_get_grad: NaN propagates; the limits themselves (and -0) count as
  // outside for the gradient.
  [[nodiscard]] float clip_with_grad(float c, bool* inside) const {
    if (std::isnan(c)) {
      *inside = true;
      return c;
    }
    *inside = c > 0.0f && c < max_val_;
    const float lo = c > 0.0f ? c : 0.0f;
    return lo < max_val_ ? lo : max_val_;
  }

  // Reflection into [low, low + span]. The vectorised kernel's formula: fold |c - low| by the
  // double span, then mirror the upper half. NaN and +-inf give NaN (clip then makes it 0).
  [[nodiscard]] float reflect(float c) const {
    if (empty_) return 0.0f;
    const float a = std::fabs(c - low_);
    const float flips = std::trunc(a / twice_span_);
    const float extra = std::fma(-flips, twice_span_, a);
    const float mirrored = twice_span_ - extra;
    return (std::isnan(extra) || extra < mirrored ? extra : mirrored) + low_;
  }

  std::int32_t size_;
  float max_val_;
  float scale_;
  float low_;
  float twice_span_;
  bool empty_;
};

// An integral float (or NaN/inf) as an index in [-2, 2^30]; see detail::clamp_floor_index.
inline std::int32_t to_index(float v) { return detail::clamp_floor_index(v); }

// Keys cubic convolution weights (A = -0.75) for taps at -1, 0, +1, +2 from a fraction t.
inline void cubic_weights(float t, float w[4]) {
  constexpr float A = -0.75f;
  float x = t + 1.0f;
  w[0] = ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
  x = t;
  w[1] = ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f;
  x = 1.0f - t;
  w[2] = ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f;
  x = 2.0f - t;
  w[3] = ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
}

// PyTorch's get_cubic_coefficients_grad (it subtracts these, hence the sign convention).
inline void cubic_weight_grads(float t, float w[4]) {
  constexpr float A = -0.75f;
  float x = -1.0f - t;
  w[0] = (-3.0f * A * x - 10.0f * A) * x - 8.0f * A;
  x = -t;
  w[1] = (-3.0f * (A + 2.0f) * x - 2.0f * (A + 3.0f)) * x;
  x = 1.0f - t;
  w[2] = (3.0f * (A + 2.0f) * x - 2.0f * (A + 3.0f)) * x;
  x = 2.0f - t;
  w[3] = (3.0f * A * x - 10.0f * A) * x + 8.0f * A;
}

// The 4x4 taps of a bicubic sample: each integer tap goes through the padding transform and is
// read only when inside (zeros padding), like PyTorch's get_value_bounded.
struct CubicTaps {
  std::int32_t col[4];   // x index of tap i (0 when outside)
  std::int32_t row[4];   // y index * w of tap j (0 when outside)
  std::uint32_t col_in;  // bit i: column i inside
  std::uint32_t row_in;  // bit j: row j inside
  float wx[4], wy[4];
  float tx, ty;
};

template <PaddingMode P, bool AC>
inline CubicTaps cubic_taps(const Axis<P, AC>& ax, const Axis<P, AC>& ay, float gx, float gy) {
  CubicTaps t;
  const float x = ax.unnormalize(gx);
  const float y = ay.unnormalize(gy);
  const float x0 = std::floor(x);
  const float y0 = std::floor(y);
  t.tx = x - x0;
  t.ty = y - y0;
  cubic_weights(t.tx, t.wx);
  cubic_weights(t.ty, t.wy);
  t.col_in = 0;
  t.row_in = 0;
  for (int i = 0; i < 4; ++i) {
    const float offset = static_cast<float>(i - 1);
    const std::int32_t xi = to_index(std::trunc(ax.pad(x0 + offset)));
    const std::int32_t yi = to_index(std::trunc(ay.pad(y0 + offset)));
    const bool xok = xi >= 0 && xi < ax.size();
    const bool yok = yi >= 0 && yi < ay.size();
    t.col[i] = xok ? xi : 0;
    t.row[i] = yok ? yi * ax.size() : 0;
    t.col_in |= static_cast<std::uint32_t>(xok) << i;
    t.row_in |= static_cast<std::uint32_t>(yok) << i;
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Forward kernels. `in` is image n's [C, H, W], `grid` points at the block's first (x, y) pair,
// `out` at the block's first pixel of channel 0 of image n.

template <PaddingMode P, bool AC>
void bilinear_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                    const float* in, const float* grid, float* out, std::int64_t count) {
  std::int32_t off[4][kBlock];
  float wt[4][kBlock];
  std::uint32_t inside[kBlock];
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  for (std::int64_t p = 0; p < count; ++p) {
    const BilinearTaps t =
        detail::bilinear_taps(ax.apply(grid[2 * p]), ay.apply(grid[2 * p + 1]), h, w);
    for (int k = 0; k < 4; ++k) {
      off[k][p] = t.offset[k];
      wt[k][p] = t.weight[k];
    }
    inside[p] = t.inside;
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int32_t o0 = off[0][p], o1 = off[1][p], o2 = off[2][p], o3 = off[3][p];
    const float w0 = wt[0][p], w1 = wt[1][p], w2 = wt[2][p], w3 = wt[3][p];
    const float* src = in;
    float* dst = out + p;
    if (inside[p] == kAllInside) {
      for (std::int64_t c = 0; c < g.c; ++c, src += in_plane, dst += out_plane) {
        *dst = std::fma(src[o3], w3, std::fma(src[o2], w2, std::fma(src[o1], w1, src[o0] * w0)));
      }
    } else {
      const std::uint32_t m = inside[p];
      const bool b0 = m & 1u, b1 = m & 2u, b2 = m & 4u, b3 = m & 8u;
      for (std::int64_t c = 0; c < g.c; ++c, src += in_plane, dst += out_plane) {
        const float v0 = b0 ? src[o0] : 0.0f;
        const float v1 = b1 ? src[o1] : 0.0f;
        const float v2 = b2 ? src[o2] : 0.0f;
        const float v3 = b3 ? src[o3] : 0.0f;
        *dst = std::fma(v3, w3, std::fma(v2, w2, std::fma(v1, w1, v0 * w0)));
      }
    }
  }
}

template <PaddingMode P, bool AC>
void nearest_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                   const float* in, const float* grid, float* out, std::int64_t count) {
  std::int32_t off[kBlock];
  bool ok[kBlock];
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  for (std::int64_t p = 0; p < count; ++p) {
    // nearbyint: round half to even, as _mm256_round_ps does (std::round would not).
    const std::int32_t xi = to_index(std::nearbyint(ax.apply(grid[2 * p])));
    const std::int32_t yi = to_index(std::nearbyint(ay.apply(grid[2 * p + 1])));
    ok[p] = xi >= 0 && xi < w && yi >= 0 && yi < h;
    off[p] = ok[p] ? yi * w + xi : 0;
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t p = 0; p < count; ++p) {
    const float* src = in + off[p];
    float* dst = out + p;
    if (ok[p]) {
      for (std::int64_t c = 0; c < g.c; ++c, src += in_plane, dst += out_plane) *dst = *src;
    } else {
      for (std::int64_t c = 0; c < g.c; ++c, dst += out_plane) *dst = 0.0f;
    }
  }
}

template <PaddingMode P, bool AC>
void bicubic_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                   const float* in, const float* grid, float* out, std::int64_t count) {
  CubicTaps taps[kBlock];
  for (std::int64_t p = 0; p < count; ++p) {
    taps[p] = cubic_taps(ax, ay, grid[2 * p], grid[2 * p + 1]);
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t p = 0; p < count; ++p) {
    const CubicTaps& t = taps[p];
    const float* src = in;
    float* dst = out + p;
    for (std::int64_t c = 0; c < g.c; ++c, src += in_plane, dst += out_plane) {
      float rows[4];
      for (int j = 0; j < 4; ++j) {
        const float* r = src + t.row[j];
        const bool rj = (t.row_in >> j) & 1u;
        float v[4];
        for (int i = 0; i < 4; ++i) v[i] = (rj && ((t.col_in >> i) & 1u)) ? r[t.col[i]] : 0.0f;
        rows[j] = std::fma(t.wx[3], v[3],
                           std::fma(t.wx[2], v[2], std::fma(t.wx[1], v[1], t.wx[0] * v[0])));
      }
      *dst = std::fma(t.wy[3], rows[3],
                      std::fma(t.wy[2], rows[2], std::fma(t.wy[1], rows[1], t.wy[0] * rows[0])));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Backward kernels. Same pointers as forward plus `gout` (block of grad_output, channel 0),
// `gin` (image n's grad_input accumulator [C, H, W]) and `ggrid` (block of grad_grid).

template <PaddingMode P, bool AC>
void bilinear_backward_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                             const float* in, const float* grid, const float* gout, float* gin,
                             float* ggrid, std::int64_t count) {
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t p = 0; p < count; ++p) {
    float mx, my;
    const float x = ax.apply_with_grad(grid[2 * p], &mx);
    const float y = ay.apply_with_grad(grid[2 * p + 1], &my);
    const BilinearTaps t = detail::bilinear_taps(x, y, h, w);
    const float north = t.ly, south = 1.0f - t.ly, west = t.lx, east = 1.0f - t.lx;
    const bool b0 = t.inside & 1u, b1 = t.inside & 2u, b2 = t.inside & 4u, b3 = t.inside & 8u;
    float gx = 0.0f, gy = 0.0f;
    const float* src = in;
    const float* go = gout + p;
    float* gi = gin;
    for (std::int64_t c = 0; c < g.c; ++c, src += in_plane, gi += in_plane, go += out_plane) {
      const float d = *go;
      if (b0) gi[t.offset[0]] += t.weight[0] * d;
      if (b1) gi[t.offset[1]] += t.weight[1] * d;
      if (b2) gi[t.offset[2]] += t.weight[2] * d;
      if (b3) gi[t.offset[3]] += t.weight[3] * d;
      const float v0 = b0 ? src[t.offset[0]] : 0.0f;
      const float v1 = b1 ? src[t.offset[1]] : 0.0f;
      const float v2 = b2 ? src[t.offset[2]] : 0.0f;
      const float v3 = b3 ? src[t.offset[3]] : 0.0f;
      gx += ((v1 - v0) * south + (v3 - v2) * north) * d;
      gy += ((v2 - v0) * east + (v3 - v1) * west) * d;
    }
    ggrid[2 * p] = gx * mx;
    ggrid[2 * p + 1] = gy * my;
  }
}

template <PaddingMode P, bool AC>
void nearest_backward_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                            const float* /*in*/, const float* grid, const float* gout, float* gin,
                            float* ggrid, std::int64_t count) {
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int32_t xi = to_index(std::nearbyint(ax.apply(grid[2 * p])));
    const std::int32_t yi = to_index(std::nearbyint(ay.apply(grid[2 * p + 1])));
    if (xi >= 0 && xi < w && yi >= 0 && yi < h) {
      const float* go = gout + p;
      float* gi = gin + (yi * w + xi);
      for (std::int64_t c = 0; c < g.c; ++c, gi += in_plane, go += out_plane) *gi += *go;
    }
    ggrid[2 * p] = 0.0f;  // nearest has no gradient with respect to the grid
    ggrid[2 * p + 1] = 0.0f;
  }
}

template <PaddingMode P, bool AC>
void bicubic_backward_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                            const float* in, const float* grid, const float* gout, float* gin,
                            float* ggrid, std::int64_t count) {
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t p = 0; p < count; ++p) {
    const CubicTaps t = cubic_taps(ax, ay, grid[2 * p], grid[2 * p + 1]);
    float dx[4], dy[4];
    cubic_weight_grads(t.tx, dx);
    cubic_weight_grads(t.ty, dy);
    float gx = 0.0f, gy = 0.0f;
    const float* src = in;
    const float* go = gout + p;
    float* gi = gin;
    for (std::int64_t c = 0; c < g.c; ++c, src += in_plane, gi += in_plane, go += out_plane) {
      const float d = *go;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          if (!(((t.col_in >> i) & 1u) && ((t.row_in >> j) & 1u))) {
            // An outside tap reads 0: it adds nothing, except NaN from NaN weights.
            gx -= 0.0f * d * dx[i] * t.wy[j];
            gy -= 0.0f * d * dy[j] * t.wx[i];
            continue;
          }
          const std::int32_t o = t.row[j] + t.col[i];
          gi[o] += d * t.wx[i] * t.wy[j];
          const float v = src[o];
          gx -= v * d * dx[i] * t.wy[j];
          gy -= v * d * dy[j] * t.wx[i];
        }
      }
    }
    ggrid[2 * p] = gx * ax.scale();
    ggrid[2 * p + 1] = gy * ay.scale();
  }
}

// ---------------------------------------------------------------------------------------------
// Dispatch on (padding, align_corners) to compile-time constants.
template <class Fn>
void with_axis_type(PaddingMode padding, bool align_corners, Fn&& fn) {
  auto go = [&](auto pad_tag) {
    constexpr PaddingMode kPad = decltype(pad_tag)::value;
    if (align_corners) {
      fn(static_cast<Axis<kPad, true>*>(nullptr));
    } else {
      fn(static_cast<Axis<kPad, false>*>(nullptr));
    }
  };
  switch (padding) {
    case PaddingMode::zeros:
      go(std::integral_constant<PaddingMode, PaddingMode::zeros>{});
      break;
    case PaddingMode::border:
      go(std::integral_constant<PaddingMode, PaddingMode::border>{});
      break;
    case PaddingMode::reflection:
      go(std::integral_constant<PaddingMode, PaddingMode::reflection>{});
      break;
  }
}

Geometry validate(const Tensor& input, const Tensor& grid, const char* where) {
  check_rank(input, 4, "input", where);
  check_rank(grid, 4, "grid", where);
  const auto s = input.nchw("input");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where,
               ": tensor 'input' expected non-empty spatial dimensions, got ",
               to_string(input.shape()));
  CVATTN_CHECK(grid.dim(0) == s.n && grid.dim(3) == 2, ShapeError, where, ": tensor 'grid' expected ",
               to_string({s.n, kAny, kAny, 2}), " (batch of 'input' ", to_string(input.shape()),
               "), got ", to_string(grid.shape()));
  return {s.n, s.c, s.h, s.w, grid.dim(1), grid.dim(2)};
}

void check_mode(const GridSampleOptions& options, const char* where) {
  const auto m = static_cast<int>(options.mode());
  const auto p = static_cast<int>(options.padding_mode());
  CVATTN_CHECK(m >= 0 && m <= 2, ValueError, where, ": unknown interpolation mode ", m);
  CVATTN_CHECK(p >= 0 && p <= 2, ValueError, where, ": unknown padding mode ", p);
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleOptions& options) {
  const char* where = "grid_sample";
  check_mode(options, where);
  const Geometry g = validate(input, grid, where);
  Tensor output = Tensor::empty({g.n, g.c, g.ho, g.wo});
  if (output.numel() == 0) return output;
  const float* in = input.data();
  const float* gr = grid.data();
  float* out = output.data();
  const std::int64_t blocks = g.blocks();

  with_axis_type(options.padding_mode(), options.align_corners(), [&](auto* tag) {
    using AxisT = std::remove_pointer_t<decltype(tag)>;
    const AxisT ax(g.w), ay(g.h);
    const Interpolation mode = options.mode();
    detail::parallel_for(g.n * blocks, [&](std::int64_t task) {
      const std::int64_t n = task / blocks;
      const std::int64_t p0 = (task % blocks) * kBlock;
      const std::int64_t count = std::min(kBlock, g.out_plane() - p0);
      const float* in_n = in + n * g.c * g.in_plane();
      const float* grid_b = gr + (n * g.out_plane() + p0) * 2;
      float* out_b = out + n * g.c * g.out_plane() + p0;
      switch (mode) {
        case Interpolation::bilinear:
          bilinear_block(g, ax, ay, in_n, grid_b, out_b, count);
          break;
        case Interpolation::nearest:
          nearest_block(g, ax, ay, in_n, grid_b, out_b, count);
          break;
        case Interpolation::bicubic:
          bicubic_block(g, ax, ay, in_n, grid_b, out_b, count);
          break;
      }
    });
  });
  return output;
}

GridSampleGrads grid_sample_backward(const Tensor& input, const Tensor& grid,
                                     const Tensor& grad_output,
                                     const GridSampleOptions& options) {
  const char* where = "grid_sample_backward";
  check_mode(options, where);
  const Geometry g = validate(input, grid, where);
  check_defined(grad_output, "grad_output", where);
  CVATTN_CHECK(grad_output.shape() == Shape({g.n, g.c, g.ho, g.wo}), ShapeError, where,
               ": tensor 'grad_output' expected ", to_string({g.n, g.c, g.ho, g.wo}),
               " (the shape of grid_sample's output), got ", to_string(grad_output.shape()));
  GridSampleGrads grads{Tensor::zeros(input.shape()), Tensor::zeros(grid.shape())};
  if (g.n == 0 || g.out_plane() == 0) return grads;

  const float* in = input.data();
  const float* gr = grid.data();
  const float* gout = grad_output.data();
  float* gin = grads.grad_input.data();
  float* ggrid = grads.grad_grid.data();
  const std::int64_t blocks = g.blocks();
  const std::int64_t image = g.c * g.in_plane();

  // Scatter into grad_input without races: whole images per task when there are enough of
  // them; otherwise every worker accumulates into its own copy, summed afterwards.
  const std::int64_t threads = detail::max_threads();
  const std::int64_t tasks = g.n * blocks;
  const std::int64_t workers = (threads > 1 && g.n < threads) ? std::min(threads, tasks) : 1;
  std::vector<Tensor> partial;
  for (std::int64_t t = 1; t < workers; ++t) partial.push_back(Tensor::zeros(input.shape()));

  with_axis_type(options.padding_mode(), options.align_corners(), [&](auto* tag) {
    using AxisT = std::remove_pointer_t<decltype(tag)>;
    const AxisT ax(g.w), ay(g.h);
    const Interpolation mode = options.mode();
    auto run_task = [&](std::int64_t task, float* gin_all) {
      const std::int64_t n = task / blocks;
      const std::int64_t p0 = (task % blocks) * kBlock;
      const std::int64_t count = std::min(kBlock, g.out_plane() - p0);
      const float* in_n = in + n * image;
      const float* grid_b = gr + (n * g.out_plane() + p0) * 2;
      const float* gout_b = gout + n * g.c * g.out_plane() + p0;
      float* gin_n = gin_all + n * image;
      float* ggrid_b = ggrid + (n * g.out_plane() + p0) * 2;
      switch (mode) {
        case Interpolation::bilinear:
          bilinear_backward_block(g, ax, ay, in_n, grid_b, gout_b, gin_n, ggrid_b, count);
          break;
        case Interpolation::nearest:
          nearest_backward_block(g, ax, ay, in_n, grid_b, gout_b, gin_n, ggrid_b, count);
          break;
        case Interpolation::bicubic:
          bicubic_backward_block(g, ax, ay, in_n, grid_b, gout_b, gin_n, ggrid_b, count);
          break;
      }
    };
    if (workers == 1) {
      detail::parallel_for(g.n, [&](std::int64_t n) {
        for (std::int64_t b = 0; b < blocks; ++b) run_task(n * blocks + b, gin);
      });
    } else {
      detail::parallel_for(workers, [&](std::int64_t t) {
        float* target = t == 0 ? gin : partial[static_cast<std::size_t>(t - 1)].data();
        for (std::int64_t task = tasks * t / workers; task < tasks * (t + 1) / workers; ++task) {
          run_task(task, target);
        }
      });
    }
  });

  if (!partial.empty()) {
    const std::int64_t total = grads.grad_input.numel();
    detail::parallel_chunks(total, [&](std::int64_t begin, std::int64_t end) {
      for (const Tensor& part : partial) {
        const float* src = part.data();
        for (std::int64_t i = begin; i < end; ++i) gin[i] += src[i];
      }
    });
  }
  return grads;
}

}  // namespace cvattn::functional
