#pragma once
// Direct (tap-loop) convolution of conv2d's depthwise and few-input-channel convs as
// runtime-dispatched Highway kernels (bodies in depthwise_kernels-inl.h, reference twin in
// functional/reference/depthwise_kernels.hpp).
//
// An input plane's zero-padded image (padded pixel (y, x), y < H + 2 ph, x < W + 2 pw) is stored
// as sh x sw phase planes: padded pixel (y, x) lies in phase (y % sh, x % sw) at
// (y / sh, x / sw), each phase hq x wq (hq = ceil((H + 2 ph) / sh), wq likewise). Tap (u, v) of
// output (oy, ox) reads padded pixel (oy sh + u dh, ox sw + v dw), which is phase
// ((u dh) % sh, (v dw) % sw) at (oy + (u dh) / sh, ox + (v dw) / sw): at offset
// oy * wq + ox + offset(u, v) of the phase scratch. So every tap is a unit-stride read across ox
// whatever the stride, and one tap kernel serves every stride and dilation. A conv with
// several input channels per group stores one such scratch per channel, back to back, and sums
// over all channels' taps (the 3-channel stems of MobileNet / EfficientNet).
#include <cstdint>
#include <vector>

#include "functional/detail/conv_kernels.hpp"

namespace cvattn::functional::detail {

// Floats past the last phase that the tap kernel may read (but never uses): the lanes of a
// row's last vector beyond Wo. Kernels cap their vectors at this many lanes.
inline constexpr std::int64_t kDepthwiseSlack = 64;

// Where one input plane's phases lie in the scratch; sizes are overflow-checked by
// depthwise_layout.
struct DepthwiseLayout {
  std::int64_t h, w;    // input plane
  std::int64_t ph, pw;  // zero padding
  std::int64_t sh, sw;  // stride: the number of phases in each axis
  std::int64_t hq, wq;  // size of each phase plane
  std::int64_t ho, wo;  // output plane
  [[nodiscard]] std::int64_t phase_size() const { return hq * wq; }
  // Floats of one input plane's phases.
  [[nodiscard]] std::int64_t plane_floats() const { return sh * sw * phase_size(); }
};

// The layout of g's input planes; throws ShapeError when its sizes overflow.
[[nodiscard]] DepthwiseLayout depthwise_layout(const ConvGeometry& g);

// offsets[(c * kh + u) * kw + v], c < g.cin_g: where tap (c, u, v) of output (0, 0) lies in a
// scratch of g.cin_g planes laid out by `l` back to back (the order of a weight row).
[[nodiscard]] std::vector<std::int64_t> depthwise_offsets(const ConvGeometry& g,
                                                          const DepthwiseLayout& l);

// Writes the [h, w] plane src into `phases` as l's zero-padded phases (l.plane_floats() floats,
// every one written), then kDepthwiseSlack zeros. The phases of several channels can be split
// back to back, in increasing order: each split overwrites only the previous one's slack.
void depthwise_split(const DepthwiseLayout& l, const float* src, float* phases);

// out[oy * wo + ox] = bias + sum_t k[t] * scratch[oy * wq + ox + offsets[t]] over t < taps, for
// oy in [oy0, oy1) and ox < wo; `scratch` must have kDepthwiseSlack readable floats past the
// largest index a valid output reads (a split's slack). Taps are summed in order t.
void depthwise_taps(const DepthwiseLayout& l, const std::int64_t* offsets, std::int64_t taps,
                    const float* k, float bias, const float* scratch, float* out, std::int64_t oy0,
                    std::int64_t oy1);

// dst[i] = src[2 i] for i < n (reads src[0 .. 2 n - 2] only): im2col's stride-2 rows.
void gather_stride2(const float* src, float* dst, std::int64_t n);

// `rows` whole output rows of im2col with stride 2, one dispatched call (per-row dispatch cost
// 3-4 % of a stride-2 conv, docs/performance.md): row r is dst + r * dst_step, with
// d[i] = 0 for i < lo and for max(lo, hi) <= i < wo, and d[lo .. hi) = gather_stride2 of
// src + r * src_step + 2 lo + off (reads only the floats that gather reads).
void im2col_stride2_rows(const float* src, std::int64_t src_step, float* dst, std::int64_t dst_step,
                         std::int64_t lo, std::int64_t hi, std::int64_t wo, std::int64_t off,
                         std::int64_t rows);

}  // namespace cvattn::functional::detail
