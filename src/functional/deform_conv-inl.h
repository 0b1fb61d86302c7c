// Per-target kernels of deform_conv2d (functional/deform_conv.cpp: validation, the work plan and
// the runtime dispatch), compiled once for every Highway target: the taps of a chunk of output
// pixels, the deformable im2col that samples the channels-last image with them, the
// channels-last copy, and the register-blocked GEMM against the packed weight. The reference twin
// is functional/reference/deform_conv.hpp.
#if defined(CVATTN_FUNCTIONAL_DEFORM_CONV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DEFORM_CONV_INL_H_
#undef CVATTN_FUNCTIONAL_DEFORM_CONV_INL_H_
#else
#define CVATTN_FUNCTIONAL_DEFORM_CONV_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "functional/detail/bilinear_taps.hpp"
#include "functional/detail/deform_conv_parts.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Taps of `count` consecutive output pixels of one row: base y `by`, base x bx[t], offsets
// dy[t], dx[t] and (Masked) mask m[t]; written to tb at position `at`.
template <bool Masked>
void taps_of_row(float by, const float* HWY_RESTRICT bx, const float* HWY_RESTRICT dy,
                 const float* HWY_RESTRICT dx, const float* HWY_RESTRICT m, std::int64_t count,
                 std::int32_t h, std::int32_t w, const DeformTapBlock& tb, std::int64_t at) {
  const std::int32_t zero_pixel = h * w;
  std::int32_t* HWY_RESTRICT i0 = tb.index[0] + at;
  std::int32_t* HWY_RESTRICT i1 = tb.index[1] + at;
  std::int32_t* HWY_RESTRICT i2 = tb.index[2] + at;
  std::int32_t* HWY_RESTRICT i3 = tb.index[3] + at;
  float* HWY_RESTRICT w0 = tb.weight[0] + at;
  float* HWY_RESTRICT w1 = tb.weight[1] + at;
  float* HWY_RESTRICT w2 = tb.weight[2] + at;
  float* HWY_RESTRICT w3 = tb.weight[3] + at;
  std::int64_t t0 = 0;
  // Compilers vectorise the scalar loops below narrowly and compute every tap twice; one
  // full-width pass with the same float operations. Only in-range samples keep their corners, and
  // for those floor(x) lies in [-1, w-1] (floor(y) in [-1, h-1]), so one signed test per side
  // tells a corner inside.
  {
    const hn::ScalableTag<float> d;
    const hn::RebindToSigned<decltype(d)> di;
    const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
    const auto hf = hn::Set(d, static_cast<float>(h));
    const auto wf = hn::Set(d, static_cast<float>(w));
    const auto minus1 = hn::Set(d, -1.0f);
    const auto one = hn::Set(d, 1.0f);
    const auto byv = hn::Set(d, by);
    const auto wi = hn::Set(di, w);
    const auto w_last = hn::Set(di, w - 1);
    const auto h_last = hn::Set(di, h - 1);
    const auto neg1 = hn::Set(di, -1);
    const auto zp = hn::Set(di, zero_pixel);
    const auto one_i = hn::Set(di, 1);
    for (; t0 + lanes <= count; t0 += lanes) {
      const auto py = hn::Add(byv, hn::LoadU(d, dy + t0));
      const auto px = hn::Add(hn::LoadU(d, bx + t0), hn::LoadU(d, dx + t0));
      const auto ok = hn::And(hn::And(hn::Gt(px, minus1), hn::Lt(px, wf)),
                              hn::And(hn::Gt(py, minus1), hn::Lt(py, hf)));
      const auto x0 = hn::Floor(px);
      const auto y0 = hn::Floor(py);
      const auto lx = hn::Sub(px, x0);
      const auto ly = hn::Sub(py, y0);
      const auto hx = hn::Sub(one, lx);
      const auto hy = hn::Sub(one, ly);
      auto q0 = hn::IfThenElseZero(ok, hn::Mul(hy, hx));
      auto q1 = hn::IfThenElseZero(ok, hn::Mul(hy, lx));
      auto q2 = hn::IfThenElseZero(ok, hn::Mul(ly, hx));
      auto q3 = hn::IfThenElseZero(ok, hn::Mul(ly, lx));
      if constexpr (Masked) {
        const auto sc = hn::LoadU(d, m + t0);
        q0 = hn::Mul(sc, q0), q1 = hn::Mul(sc, q1);
        q2 = hn::Mul(sc, q2), q3 = hn::Mul(sc, q3);
      }
      hn::StoreU(q0, d, w0 + t0);
      hn::StoreU(q1, d, w1 + t0);
      hn::StoreU(q2, d, w2 + t0);
      hn::StoreU(q3, d, w3 + t0);
      // Out-of-range lanes are zeroed before the integer arithmetic (no overflow); their corners
      // are all replaced by the zero pixel below.
      const auto oki = hn::RebindMask(di, ok);
      const auto xi = hn::IfThenElseZero(oki, hn::ConvertTo(di, x0));
      const auto yi = hn::IfThenElseZero(oki, hn::ConvertTo(di, y0));
      const auto west = hn::And(oki, hn::Gt(xi, neg1));
      const auto east = hn::And(oki, hn::Gt(w_last, xi));
      const auto north = hn::Gt(yi, neg1);
      const auto south = hn::Gt(h_last, yi);
      const auto nw = hn::Add(hn::Mul(yi, wi), xi);
      const auto sw = hn::Add(nw, wi);
      hn::StoreU(hn::IfThenElse(hn::And(west, north), nw, zp), di, i0 + t0);
      hn::StoreU(hn::IfThenElse(hn::And(east, north), hn::Add(nw, one_i), zp), di, i1 + t0);
      hn::StoreU(hn::IfThenElse(hn::And(west, south), sw, zp), di, i2 + t0);
      hn::StoreU(hn::IfThenElse(hn::And(east, south), hn::Add(sw, one_i), zp), di, i3 + t0);
    }
  }
  // The tail. Two passes over the same taps: compilers vectorise each, but not one loop storing
  // all eight.
  for (std::int64_t t = t0; t < count; ++t) {
    const float py = by + dy[t];
    const float px = bx[t] + dx[t];
    const float scale = Masked ? m[t] : 1.0f;
    const std::uint32_t ok = deform_sample_in_range(px, py, h, w);
    const BilinearTaps s = bilinear_taps(px, py, h, w);
    // torchvision: mask * (sum of weight * corner), a sample out of range being 0 (so a NaN mask
    // still poisons it).
    w0[t] = scale * (ok ? s.weight[0] : 0.0f);
    w1[t] = scale * (ok ? s.weight[1] : 0.0f);
    w2[t] = scale * (ok ? s.weight[2] : 0.0f);
    w3[t] = scale * (ok ? s.weight[3] : 0.0f);
  }
  for (std::int64_t t = t0; t < count; ++t) {
    const float py = by + dy[t];
    const float px = bx[t] + dx[t];
    const std::uint32_t ok = deform_sample_in_range(px, py, h, w);
    const BilinearTaps s = bilinear_taps(px, py, h, w);
    // A corner outside the image, or of a sample out of range, reads the zero pixel.
    const std::uint32_t inside = ok ? s.inside : 0u;
    i0[t] = (inside & 1u) ? s.offset[0] : zero_pixel;
    i1[t] = (inside & 2u) ? s.offset[1] : zero_pixel;
    i2[t] = (inside & 4u) ? s.offset[2] : zero_pixel;
    i3[t] = (inside & 8u) ? s.offset[3] : zero_pixel;
  }
}

// Taps of offset group grp at kernel tap k for output pixels [p0, p0 + cols) of one image
// (offset, mask: that image's tensors; mask null for v1).
inline void DeformComputeTaps(const DeformGeometry& g, const DeformBaseGrid& grid,
                              const float* offset, const float* mask, std::int64_t grp,
                              std::int64_t k, std::int64_t p0, std::int64_t cols,
                              const DeformTapBlock& tb) {
  const std::int64_t p_all = g.positions();
  const std::int64_t i = k / g.kw;
  const std::int64_t j = k % g.kw;
  const float* dy = offset + (grp * 2 * g.taps + 2 * k) * p_all;
  const float* dx = dy + p_all;
  const float* m = g.masked ? mask + (grp * g.taps + k) * p_all : nullptr;
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  const float* bx = grid.x.data() + j * g.wo;
  std::int64_t p = p0;
  const std::int64_t end = p0 + cols;
  while (p < end) {  // one output row segment at a time, so the inner loop is straight
    const std::int64_t oy = p / g.wo;
    const std::int64_t ox0 = p - oy * g.wo;
    const std::int64_t count = std::min(g.wo - ox0, end - p);
    const float by = grid.y[static_cast<std::size_t>(i * g.ho + oy)];
    if (m) {
      taps_of_row<true>(by, bx + ox0, dy + p, dx + p, m + p, count, h, w, tb, p - p0);
    } else {
      taps_of_row<false>(by, bx + ox0, dy + p, dx + p, nullptr, count, h, w, tb, p - p0);
    }
    p += count;
  }
}

// col[p, 0:len] = sum_q weight[q][p] * image[index[q][p], 0:len] for the chunk's pixels, where
// `image` points at the first channel of the range in the channels-last copy.
template <bool Aligned>
void scatter_rows(const DeformTapBlock& tb, std::int64_t cols, const float* image,
                  std::int64_t pixel_stride, std::int64_t len, float* col,
                  std::int64_t col_stride) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t p = 0; p < cols; ++p) {
    const float* HWY_RESTRICT s0 = image + tb.index[0][p] * pixel_stride;
    const float* HWY_RESTRICT s1 = image + tb.index[1][p] * pixel_stride;
    const float* HWY_RESTRICT s2 = image + tb.index[2][p] * pixel_stride;
    const float* HWY_RESTRICT s3 = image + tb.index[3][p] * pixel_stride;
    const float w0 = tb.weight[0][p], w1 = tb.weight[1][p];
    const float w2 = tb.weight[2][p], w3 = tb.weight[3][p];
    float* HWY_RESTRICT dst = col + p * col_stride;
    std::int64_t c = 0;
    // Compilers vectorise the scalar loop below narrowly; the same operations full width.
    const auto v0 = hn::Set(d, w0), v1 = hn::Set(d, w1);
    const auto v2 = hn::Set(d, w2), v3 = hn::Set(d, w3);
    for (; c + lanes <= len; c += lanes) {
      auto acc = hn::Mul(v0, hn::LoadU(d, s0 + c));
      acc = hn::MulAdd(v1, hn::LoadU(d, s1 + c), acc);
      acc = hn::MulAdd(v2, hn::LoadU(d, s2 + c), acc);
      acc = hn::MulAdd(v3, hn::LoadU(d, s3 + c), acc);
      // Some CPU tunings split unaligned full-width stores in two; aligned ones stay whole.
      if constexpr (Aligned) {
        hn::Store(acc, d, dst + c);
      } else {
        hn::StoreU(acc, d, dst + c);
      }
    }
    for (; c < len; ++c) {
      dst[c] = std::fma(w3, s3[c], std::fma(w2, s2[c], std::fma(w1, s1[c], w0 * s0[c])));
    }
  }
}

inline void DeformScatterSamples(const DeformTapBlock& tb, std::int64_t cols, const float* image,
                                 std::int64_t pixel_stride, std::int64_t len, float* col,
                                 std::int64_t col_stride) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto at = reinterpret_cast<std::uintptr_t>(col);
  if (at % (static_cast<std::uintptr_t>(lanes) * sizeof(float)) == 0 && col_stride % lanes == 0) {
    scatter_rows<true>(tb, cols, image, pixel_stride, len, col, col_stride);
  } else {
    scatter_rows<false>(tb, cols, image, pixel_stride, len, col, col_stride);
  }
}

// Pixels [p0, p1) of one image [C, hw] copied to its channels-last copy dst [hw + 1, C], in
// 4 x 4 blocks transposed in 128-bit registers (where the target has them).
inline void DeformChannelsLastTile(const float* src, float* dst, std::int64_t cin, std::int64_t hw,
                                   std::int64_t p0, std::int64_t p1) {
  std::int64_t c = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::FixedTag<float, 4> d;
  for (; c + 4 <= cin; c += 4) {
    const float* s = src + c * hw;
    // Each row is read for a few lines only, too short for the hardware prefetcher: fetch the
    // rows of the group of channels after next while this one is transposed.
    if (c + 12 <= cin) {
      const float* ahead = s + 8 * hw;
      for (std::int64_t r = 0; r < 4; ++r) {
        for (std::int64_t q = p0; q < p1; q += 16) hwy::Prefetch(ahead + r * hw + q);
      }
    }
    std::int64_t p = p0;
    for (; p + 4 <= p1; p += 4) {
      const auto r0 = hn::LoadU(d, s + p);  // channel c, pixels p..p+3
      const auto r1 = hn::LoadU(d, s + hw + p);
      const auto r2 = hn::LoadU(d, s + 2 * hw + p);
      const auto r3 = hn::LoadU(d, s + 3 * hw + p);
      // t0 = [r0[0], r1[0], r0[1], r1[1]], t1 likewise r2/r3; t2, t3 the upper pixels.
      const auto t0 = hn::InterleaveLower(d, r0, r1), t1 = hn::InterleaveLower(d, r2, r3);
      const auto t2 = hn::InterleaveUpper(d, r0, r1), t3 = hn::InterleaveUpper(d, r2, r3);
      hn::StoreU(hn::ConcatLowerLower(d, t1, t0), d, dst + p * cin + c);
      hn::StoreU(hn::ConcatUpperUpper(d, t1, t0), d, dst + (p + 1) * cin + c);
      hn::StoreU(hn::ConcatLowerLower(d, t3, t2), d, dst + (p + 2) * cin + c);
      hn::StoreU(hn::ConcatUpperUpper(d, t3, t2), d, dst + (p + 3) * cin + c);
    }
    for (; p < p1; ++p) {
      for (std::int64_t cc = 0; cc < 4; ++cc) dst[p * cin + c + cc] = s[cc * hw + p];
    }
  }
#endif
  for (; c < cin; ++c) {
    const float* s = src + c * hw;
    for (std::int64_t p = p0; p < p1; ++p) dst[p * cin + c] = s[p];
  }
}

// out[oc * ldo + i] += sum_r col[i * ldc + r] * panel[r * kDeformPanel + oc] for MR pixels i and
// the first `oc_valid` output channels oc of the panel; with `bias`, out is set to bias[oc] + sum
// instead (the first depth block: saves a pass writing the bias and reading it back). The panel's
// 16 channels are kNV vectors (one on AVX-512, two on AVX2, four on SSE4 / NEON).
template <int MR>
void tile_kernel(const float* col, std::int64_t ldc, const float* panel, std::int64_t depth,
                 float* out, std::int64_t ldo, std::int64_t oc_valid, const float* bias) {
  const hn::CappedTag<float, kDeformPanel> d;
  constexpr std::size_t kLanes = hn::MaxLanes(d);
  constexpr std::size_t kNV = kDeformPanel / kLanes;
  static_assert(kNV * kLanes == kDeformPanel, "the panel must be whole vectors");
  using V = hn::Vec<decltype(d)>;
  V acc[MR][kNV];
  for (int i = 0; i < MR; ++i) {
    for (std::size_t v = 0; v < kNV; ++v) acc[i][v] = hn::Zero(d);
  }
  for (std::int64_t r = 0; r < depth; ++r) {
    V wv[kNV];
    for (std::size_t v = 0; v < kNV; ++v)
      wv[v] = hn::LoadU(d, panel + r * kDeformPanel + v * kLanes);
    for (int i = 0; i < MR; ++i) {
      const V a = hn::Set(d, col[i * ldc + r]);
      for (std::size_t v = 0; v < kNV; ++v) acc[i][v] = hn::MulAdd(a, wv[v], acc[i][v]);
    }
  }
  HWY_ALIGN float sum[MR][kDeformPanel];
  for (int i = 0; i < MR; ++i) {
    for (std::size_t v = 0; v < kNV; ++v) hn::Store(acc[i][v], d, sum[i] + v * kLanes);
  }
  if (bias) {
    for (std::int64_t oc = 0; oc < oc_valid; ++oc) {
      float* o = out + oc * ldo;
      for (int i = 0; i < MR; ++i) o[i] = bias[oc] + sum[i][oc];
    }
  } else {
    for (std::int64_t oc = 0; oc < oc_valid; ++oc) {
      float* o = out + oc * ldo;
      for (int i = 0; i < MR; ++i) o[i] += sum[i][oc];
    }
  }
}

// out[oc, p] (row stride ldo) += sum_r col[p, r] * panels[q][r][oc] for pixels p < cols and the
// cout_g output channels spread over the panels (= bias[oc] + sum when bias is given).
inline void DeformGemmPanels(const float* col, std::int64_t cols, std::int64_t depth,
                             const float* panels, std::int64_t panel_stride, std::int64_t cout_g,
                             float* out, std::int64_t ldo, const float* bias) {
  constexpr std::int64_t kPanel = kDeformPanel;
  constexpr int kRows = kDeformTileRows;
  for (std::int64_t q = 0; q * kPanel < cout_g; ++q) {
    const float* panel = panels + q * panel_stride;
    const float* bq = bias ? bias + q * kPanel : nullptr;
    const std::int64_t oc_valid = std::min(kPanel, cout_g - q * kPanel);
    float* o = out + q * kPanel * ldo;
    std::int64_t p = 0;
    for (; p + kRows <= cols; p += kRows) {
      tile_kernel<kRows>(col + p * depth, depth, panel, depth, o + p, ldo, oc_valid, bq);
    }
    const float* c = col + p * depth;
    switch (cols - p) {
      case 5:
        tile_kernel<5>(c, depth, panel, depth, o + p, ldo, oc_valid, bq);
        break;
      case 4:
        tile_kernel<4>(c, depth, panel, depth, o + p, ldo, oc_valid, bq);
        break;
      case 3:
        tile_kernel<3>(c, depth, panel, depth, o + p, ldo, oc_valid, bq);
        break;
      case 2:
        tile_kernel<2>(c, depth, panel, depth, o + p, ldo, oc_valid, bq);
        break;
      case 1:
        tile_kernel<1>(c, depth, panel, depth, o + p, ldo, oc_valid, bq);
        break;
      default:
        break;
    }
  }
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
