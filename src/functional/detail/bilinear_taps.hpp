#pragma once
// The one bilinear tap routine of cvattn, shared by grid_sample (normalised coordinates, after
// unnormalisation and padding) and deform_conv2d (pixel coordinates). It works in pixel space:
// given a sample position (x, y) in an h x w plane it returns the four corners, their weights
// and which corners lie inside the plane, with PyTorch's arithmetic and corner order.
//
// Safety: every offset it returns is a valid index into the plane (a corner outside the plane
// gets offset 0 and its `inside` bit cleared), for any input including NaN, +-inf and values
// beyond the int32 range, so callers may load all four unconditionally and select with the bits.
// The plane must not be empty (h, w >= 1) and h*w must fit in int32.
#include <cmath>
#include <cstdint>

// Always inlined: the SIMD kernels that call these are compiled for several targets
// (functional/*-inl.h), and an out-of-line copy would run at the build's baseline ISA.
#if defined(__GNUC__)
#define CVATTN_TAPS_INLINE inline __attribute__((always_inline))
#else
#define CVATTN_TAPS_INLINE inline
#endif

namespace cvattn::detail {

// Corner order everywhere: 0 = nw (y0, x0), 1 = ne (y0, x0+1), 2 = sw (y0+1, x0),
// 3 = se (y0+1, x0+1), with x0 = floor(x), y0 = floor(y).
struct BilinearTaps {
  std::int32_t offset[4];  // y*w + x of each corner inside the plane, 0 for a corner outside
  float weight[4];         // (1-ly)(1-lx), (1-ly)lx, ly(1-lx), ly*lx
  std::uint32_t inside;    // bit k set when corner k lies inside the plane
  float lx, ly;            // x - x0 and y - y0 (the backward pass needs them)
};
inline constexpr std::uint32_t kAllInside = 15;

// floor(v) (an integral float, NaN or +-inf) as an index clamped to [-2, 2^30]; NaN gives -2.
// Both extremes are outside any plane, as are the "+1" neighbours of -2 and 2^30, which is
// exactly how PyTorch's int32 conversion (NaN/huge -> INT_MIN) behaves in its bounds tests.
CVATTN_TAPS_INLINE std::int32_t clamp_floor_index(float v) {
  const float lo = v >= -2.0f ? v : -2.0f;  // NaN fails the test and becomes -2
  return static_cast<std::int32_t>(lo <= 1073741824.0f ? lo : 1073741824.0f);
}

// Bit k set when corner k of the cell with top-left corner (xi, yi) lies in an h x w plane.
// Written with unsigned range tests and integer selects only (no bool values), so that loops
// computing a row of taps vectorise with GCC.
CVATTN_TAPS_INLINE std::uint32_t bilinear_inside(std::int32_t xi, std::int32_t yi, std::int32_t h,
                                                 std::int32_t w) {
  const auto uw = static_cast<std::uint32_t>(w);
  const auto uh = static_cast<std::uint32_t>(h);
  // Columns: west feeds corners 0 and 2 (mask 5), east corners 1 and 3 (mask 10).
  const std::uint32_t cols = (static_cast<std::uint32_t>(xi) < uw ? 5u : 0u) |
                             (static_cast<std::uint32_t>(xi + 1) < uw ? 10u : 0u);
  // Rows: north feeds corners 0 and 1 (mask 3), south corners 2 and 3 (mask 12).
  const std::uint32_t rows = (static_cast<std::uint32_t>(yi) < uh ? 3u : 0u) |
                             (static_cast<std::uint32_t>(yi + 1) < uh ? 12u : 0u);
  return cols & rows;
}

// Taps of the bilinear sample at pixel coordinates (x, y) of an h x w plane. Corners outside
// [0, w) x [0, h) read as zero (PyTorch's padding_mode='zeros' rule, and torchvision's R()).
CVATTN_TAPS_INLINE BilinearTaps bilinear_taps(float x, float y, std::int32_t h, std::int32_t w) {
  const float x0 = std::floor(x);
  const float y0 = std::floor(y);
  BilinearTaps t;
  t.lx = x - x0;
  t.ly = y - y0;
  const float hx = 1.0f - t.lx;  // distance to the east column
  const float hy = 1.0f - t.ly;  // distance to the south row
  t.weight[0] = hy * hx;
  t.weight[1] = hy * t.lx;
  t.weight[2] = t.ly * hx;
  t.weight[3] = t.ly * t.lx;

  const std::int32_t xi = clamp_floor_index(x0);
  const std::int32_t yi = clamp_floor_index(y0);
  t.inside = bilinear_inside(xi, yi, h, w);
  // Clamped indices make every product below small; the selects then zero outside corners.
  const std::int32_t xw = xi < 0 ? 0 : (xi < w ? xi : w - 1);
  const std::int32_t xe = xi + 1 < 0 ? 0 : (xi + 1 < w ? xi + 1 : w - 1);
  const std::int32_t row_n = (yi < 0 ? 0 : (yi < h ? yi : h - 1)) * w;
  const std::int32_t row_s = (yi + 1 < 0 ? 0 : (yi + 1 < h ? yi + 1 : h - 1)) * w;
  t.offset[0] = (t.inside & 1u) ? row_n + xw : 0;
  t.offset[1] = (t.inside & 2u) ? row_n + xe : 0;
  t.offset[2] = (t.inside & 4u) ? row_s + xw : 0;
  t.offset[3] = (t.inside & 8u) ? row_s + xe : 0;
  return t;
}

// The interpolated value of one plane: sum_k weight_k * (inside_k ? plane[offset_k] : 0), summed
// in PyTorch's order nw, ne, sw, se. A corner outside contributes 0 * weight (NaN for a NaN
// weight, as in PyTorch), never the value of the pixel its clamped offset points at.
CVATTN_TAPS_INLINE float bilinear_read(const float* plane, const BilinearTaps& t) {
  const float v0 = (t.inside & 1u) ? plane[t.offset[0]] : 0.0f;
  const float v1 = (t.inside & 2u) ? plane[t.offset[1]] : 0.0f;
  const float v2 = (t.inside & 4u) ? plane[t.offset[2]] : 0.0f;
  const float v3 = (t.inside & 8u) ? plane[t.offset[3]] : 0.0f;
  return std::fma(v3, t.weight[3],
                  std::fma(v2, t.weight[2], std::fma(v1, t.weight[1], v0 * t.weight[0])));
}

// torchvision deform_conv2d's range rule in pixel space: a sample with y <= -1, y >= h, x <= -1
// or x >= w reads 0 without touching the plane. Non-finite coordinates fail it as well (mmcv's
// behaviour; torchvision leaves NaN undefined).
// 1 when in range, else 0: an integer from bitwise & (not a bool from &&), so that loops computing
// a row of taps stay branch-free and vectorise.
CVATTN_TAPS_INLINE std::uint32_t deform_sample_in_range(float x, float y, std::int32_t h,
                                                        std::int32_t w) {
  return static_cast<std::uint32_t>((x > -1.0f) & (x < static_cast<float>(w)) & (y > -1.0f) &
                                    (y < static_cast<float>(h)));
}

}  // namespace cvattn::detail
