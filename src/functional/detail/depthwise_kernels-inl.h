// Per-target bodies of functional/detail/depthwise_kernels.hpp, compiled once for every Highway
// target by depthwise_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_DEPTHWISE_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_DEPTHWISE_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_DEPTHWISE_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_DEPTHWISE_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "functional/conv_dilated-inl.h"  // DeinterleaveRow
#include "functional/detail/depthwise_kernels.hpp"

#ifndef CVATTN_DW_UNROLL
#define CVATTN_DW_UNROLL _Pragma("GCC unroll 16")
#define CVATTN_DW_UNROLL_TAPS _Pragma("GCC unroll 25")
#endif

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// [lo, hi): the phase indices i < n whose padded coordinate i * s + a lies in the data
// [p, p + size) (a < s, so p - a + s - 1 >= 0).
struct DataSpan {
  std::int64_t lo, hi;
  DataSpan(std::int64_t size, std::int64_t p, std::int64_t s, std::int64_t a, std::int64_t n)
      : lo(std::min(n, (p - a + s - 1) / s)),
        hi(std::max(lo, std::min(n, (size + p - a + s - 1) / s))) {}
};

// Vectors of at most kDepthwiseSlack lanes: the scratch's slack covers one vector's overrun.
using DwTag = hn::CappedTag<float, static_cast<std::size_t>(kDepthwiseSlack)>;

// Zeroes [p, p + n) by whole vectors, so up to L - 1 floats past it too: callers zero before
// they write what follows. (Borders are a float or two wide; std::fill would call memset.)
HWY_INLINE void ZeroSpan(float* HWY_RESTRICT p, std::int64_t n) {
  const DwTag d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  if (n <= 0) return;
  hn::StoreU(hn::Zero(d), d, p);  // the usual border: one store
  for (std::int64_t i = L; i < n; i += L) hn::StoreU(hn::Zero(d), d, p + i);
}

// dst[0, n) = src[0, n) by vectors of tag D (n >= its lanes), the last one overlapping.
template <class D>
HWY_INLINE void CopyRowBy(D d, const float* HWY_RESTRICT src, float* HWY_RESTRICT dst,
                          std::int64_t n) {
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t i = 0; i + L < n; i += L) hn::StoreU(hn::LoadU(d, src + i), d, dst + i);
  hn::StoreU(hn::LoadU(d, src + n - L), d, dst + n - L);
}

// dst[0, n) = src[0, n): full vectors, 4-lane ones in rows narrower than a vector (which on
// 16-lane targets still hold up to 15 floats), single floats below 4.
HWY_INLINE void CopyRow(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::int64_t n) {
  const DwTag d;
  const hn::CappedTag<float, 4> d4;
  if (n >= static_cast<std::int64_t>(hn::Lanes(d))) {
    CopyRowBy(d, src, dst, n);
  } else if (n >= static_cast<std::int64_t>(hn::Lanes(d4))) {
    CopyRowBy(d4, src, dst, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// Zeroes every float of the phases that no input pixel lands in (whole rows above and below the
// data, the columns left and right of it in the data rows) and the slack after the phases.
// In increasing address order, each span's overrun landing only on floats written later.
inline void ZeroBorders(const DepthwiseLayout& l, float* HWY_RESTRICT phases) {
  const std::int64_t wq = l.wq;
  for (std::int64_t a = 0; a < l.sh; ++a) {
    const DataSpan rows(l.h, l.ph, l.sh, a, l.hq);
    for (std::int64_t b = 0; b < l.sw; ++b) {
      const DataSpan cols(l.w, l.pw, l.sw, b, wq);
      float* p = phases + (a * l.sw + b) * l.phase_size();
      ZeroSpan(p, rows.lo * wq);
      for (std::int64_t r = rows.lo; r < rows.hi; ++r) {
        float* row = p + r * wq;
        ZeroSpan(row, cols.lo);
        ZeroSpan(row + cols.hi, wq - cols.hi);
      }
      ZeroSpan(p + rows.hi * wq, (l.hq - rows.hi) * wq);
    }
  }
  ZeroSpan(phases + l.plane_floats(), kDepthwiseSlack);
}

// Stride 1: the one phase is the padded plane; its data rows are plain copies.
inline void FillStride1(const DepthwiseLayout& l, const float* HWY_RESTRICT src,
                        float* HWY_RESTRICT phases) {
  float* dst = phases + l.ph * l.wq + l.pw;
  for (std::int64_t y = 0; y < l.h; ++y) CopyRow(src + y * l.w, dst + y * l.wq, l.w);
}

// Stride 2 in both axes: each input row is split into its even and odd padded columns by
// vectors, into the two phases of its padded row's parity.
inline void FillStride2(const DepthwiseLayout& l, const float* HWY_RESTRICT src,
                        float* HWY_RESTRICT phases) {
  const std::int64_t ps = l.phase_size();
  const std::int64_t x0 = l.pw & 1;  // the first column landing in phase column 0
  const std::int64_t c0 = (x0 + l.pw) >> 1;
  const std::int64_t pairs = (l.w - x0) >> 1;
  const bool ragged = ((l.w - x0) & 1) != 0;
  for (std::int64_t y = 0; y < l.h; ++y) {
    const std::int64_t py = y + l.ph;
    float* even = phases + (py & 1) * 2 * ps + (py >> 1) * l.wq;  // phase (py % 2, 0), its row
    float* odd = even + ps;                                       // phase (py % 2, 1)
    const float* srow = src + y * l.w;
    if (x0 == 1) odd[l.pw >> 1] = srow[0];
    float* dst[2] = {even + c0, odd + c0};
    DeinterleaveRow(srow + x0, dst, 2, pairs);
    if (ragged) even[c0 + pairs] = srow[l.w - 1];
  }
}

// Any stride: pixel by pixel, the phase indices stepped without divisions.
inline void FillGeneric(const DepthwiseLayout& l, const float* HWY_RESTRICT src,
                        float* HWY_RESTRICT phases) {
  const std::int64_t ps = l.phase_size();
  std::int64_t a = l.ph % l.sh, r = l.ph / l.sh;
  const std::int64_t b0 = l.pw % l.sw, c0 = l.pw / l.sw;
  for (std::int64_t y = 0; y < l.h; ++y) {
    float* row = phases + a * l.sw * ps + r * l.wq;  // phase (a, 0), row r
    const float* srow = src + y * l.w;
    std::int64_t b = b0, c = c0;
    for (std::int64_t x = 0; x < l.w; ++x) {
      row[b * ps + c] = srow[x];
      if (++b == l.sw) b = 0, ++c;
    }
    if (++a == l.sh) a = 0, ++r;
  }
}

void DepthwiseSplit(const DepthwiseLayout& l, const float* HWY_RESTRICT src,
                    float* HWY_RESTRICT phases) {
  ZeroBorders(l, phases);
  if (l.h == 0 || l.w == 0) return;  // all padding
  if (l.sh == 1 && l.sw == 1) {
    FillStride1(l, src, phases);
  } else if (l.sh == 2 && l.sw == 2) {
    FillStride2(l, src, phases);
  } else {
    FillGeneric(l, src, phases);
  }
}

// R output rows x V adjacent vectors of tag D: out[r * wo + j] for r < R, j < V L, each the
// bias plus its taps in order. kTaps > 0 fixes the tap count (3x3, 5x5) so the tap loop
// unrolls; 0 takes `taps`. Per tap, every load is one base plus a row index and a constant.
template <int kTaps, int R, int V, class D>
HWY_INLINE void TapTile(D d, const float* HWY_RESTRICT in, std::int64_t wq,
                        const std::int64_t* HWY_RESTRICT off, std::int64_t taps,
                        const float* HWY_RESTRICT k, float bias, float* HWY_RESTRICT out,
                        std::int64_t wo) {
  using Vec = hn::Vec<D>;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  Vec acc[R][V];
  const float* row[R];
  CVATTN_DW_UNROLL
  for (int r = 0; r < R; ++r) {
    row[r] = in + r * wq;
    CVATTN_DW_UNROLL
    for (int v = 0; v < V; ++v) acc[r][v] = hn::Set(d, bias);
  }
  const auto tap = [&](std::int64_t t) HWY_ATTR {
    const Vec kt = hn::Set(d, k[t]);
    const std::int64_t o = off[t];
    CVATTN_DW_UNROLL
    for (int r = 0; r < R; ++r) {
      CVATTN_DW_UNROLL
      for (int v = 0; v < V; ++v) {
        acc[r][v] = hn::MulAdd(kt, hn::LoadU(d, row[r] + o + v * L), acc[r][v]);
      }
    }
  };
  if constexpr (kTaps > 0) {
    CVATTN_DW_UNROLL_TAPS
    for (int t = 0; t < kTaps; ++t) tap(t);
  } else {
    for (std::int64_t t = 0; t < taps; ++t) tap(t);
  }
  CVATTN_DW_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_DW_UNROLL
    for (int v = 0; v < V; ++v) hn::StoreU(acc[r][v], d, out + r * wo + v * L);
  }
}

// Output rows [oy, oy + R) by vectors of tag D (L <= wo lanes): the row's whole vectors two at a
// time, then, when L does not divide wo, one more vector ending at wo. That one recomputes a few
// outputs with the very same arithmetic, so no store is partial and none passes the row.
template <int kTaps, int R, class D>
HWY_INLINE void TapRowsBy(D d, const DepthwiseLayout& l, const std::int64_t* HWY_RESTRICT off,
                          std::int64_t taps, const float* HWY_RESTRICT k, float bias,
                          const float* HWY_RESTRICT scratch, float* HWY_RESTRICT out,
                          std::int64_t oy) {
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t whole = l.wo / L;
  const float* in = scratch + oy * l.wq;
  float* o = out + oy * l.wo;
  std::int64_t i = 0;
  for (; i + 2 <= whole; i += 2) {
    TapTile<kTaps, R, 2>(d, in + i * L, l.wq, off, taps, k, bias, o + i * L, l.wo);
  }
  if (i < whole) TapTile<kTaps, R, 1>(d, in + i * L, l.wq, off, taps, k, bias, o + i * L, l.wo);
  if (whole * L < l.wo) {
    const std::int64_t x = l.wo - L;
    TapTile<kTaps, R, 1>(d, in + x, l.wq, off, taps, k, bias, o + x, l.wo);
  }
}

// Full vectors when a row holds one; 4-lane ones (the 7-wide rows of the last stages) or single
// lanes in narrower rows.
template <int kTaps, int R>
HWY_INLINE void TapRows(const DepthwiseLayout& l, const std::int64_t* HWY_RESTRICT off,
                        std::int64_t taps, const float* HWY_RESTRICT k, float bias,
                        const float* HWY_RESTRICT scratch, float* HWY_RESTRICT out,
                        std::int64_t oy) {
  const DwTag d;
  const hn::CappedTag<float, 4> d4;
  const hn::CappedTag<float, 1> d1;
  if (l.wo >= static_cast<std::int64_t>(hn::Lanes(d))) {
    TapRowsBy<kTaps, R>(d, l, off, taps, k, bias, scratch, out, oy);
  } else if (l.wo >= static_cast<std::int64_t>(hn::Lanes(d4))) {
    TapRowsBy<kTaps, R>(d4, l, off, taps, k, bias, scratch, out, oy);
  } else {
    TapRowsBy<kTaps, R>(d1, l, off, taps, k, bias, scratch, out, oy);
  }
}

template <int kTaps>
void TapPlane(const DepthwiseLayout& l, const std::int64_t* HWY_RESTRICT off, std::int64_t taps,
              const float* HWY_RESTRICT k, float bias, const float* HWY_RESTRICT scratch,
              float* HWY_RESTRICT out, std::int64_t oy0, std::int64_t oy1) {
  std::int64_t oy = oy0;
  for (; oy + 4 <= oy1; oy += 4) TapRows<kTaps, 4>(l, off, taps, k, bias, scratch, out, oy);
  switch (oy1 - oy) {
    case 3:
      TapRows<kTaps, 3>(l, off, taps, k, bias, scratch, out, oy);
      break;
    case 2:
      TapRows<kTaps, 2>(l, off, taps, k, bias, scratch, out, oy);
      break;
    case 1:
      TapRows<kTaps, 1>(l, off, taps, k, bias, scratch, out, oy);
      break;
    default:
      break;
  }
}

void DepthwiseTaps(const DepthwiseLayout& l, const std::int64_t* HWY_RESTRICT off,
                   std::int64_t taps, const float* HWY_RESTRICT k, float bias,
                   const float* HWY_RESTRICT scratch, float* HWY_RESTRICT out, std::int64_t oy0,
                   std::int64_t oy1) {
  if (taps == 9) {
    TapPlane<9>(l, off, taps, k, bias, scratch, out, oy0, oy1);
  } else if (taps == 25) {
    TapPlane<25>(l, off, taps, k, bias, scratch, out, oy0, oy1);
  } else {
    TapPlane<0>(l, off, taps, k, bias, scratch, out, oy0, oy1);
  }
}

void GatherStride2(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  hn::Vec<decltype(d)> even, odd;
  // A vector pair reads src[2 i .. 2 i + 2 L - 1]; the last odd element, src[2 n - 1], is not
  // the caller's, so the last element is always left to the scalar tail.
  for (; i + L < n; i += L) {
    hn::LoadInterleaved2(d, src + 2 * i, even, odd);
    hn::StoreU(even, d, dst + i);
  }
  for (; i < n; ++i) dst[i] = src[2 * i];
}

void Im2colStride2Rows(const float* HWY_RESTRICT src, std::int64_t src_step,
                       float* HWY_RESTRICT dst, std::int64_t dst_step, std::int64_t lo,
                       std::int64_t hi, std::int64_t wo, std::int64_t off, std::int64_t rows) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* d = dst + r * dst_step;
    for (std::int64_t i = 0; i < lo; ++i) d[i] = 0.0f;
    if (hi > lo) GatherStride2(src + r * src_step + (lo * 2 + off), d + lo, hi - lo);
    for (std::int64_t i = std::max(lo, hi); i < wo; ++i) d[i] = 0.0f;
  }
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
