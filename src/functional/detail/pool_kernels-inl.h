// Per-target bodies of functional/detail/pool_kernels.hpp, compiled once for every Highway
// target by pool_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_POOL_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_POOL_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_POOL_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_POOL_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "functional/detail/pool_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// b where b > a or b is NaN, else a (PyTorch's update rule, NaN wins).
inline float MaxNanScalar(float a, float b) { return ((b > a) | (b != b)) ? b : a; }

template <class D, class V>
HWY_INLINE V MaxNan(D /*d*/, V a, V b) {
  return hn::IfThenElse(hn::Or(hn::Gt(b, a), hn::IsNaN(b)), b, a);
}

// acc[i] = max_nan(acc[i], x[i]) or acc[i] + x[i] for i in [i, n) in whole vectors of tag d;
// returns the first index left.
template <bool kMax, class D>
HWY_INLINE std::int64_t FoldVectors(D d, float* HWY_RESTRICT acc, const float* HWY_RESTRICT x,
                                    std::int64_t i, std::int64_t n) {
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  for (; i + L <= n; i += L) {
    const auto a = hn::LoadU(d, acc + i), b = hn::LoadU(d, x + i);
    hn::StoreU(kMax ? MaxNan(d, a, b) : hn::Add(a, b), d, acc + i);
  }
  return i;
}

// acc[i] = max_nan(acc[i], x[i]) or acc[i] + x[i] for i < n. The rest of a row after the full
// vectors goes in vectors of at most 8 and 4 lanes before the scalar loop: a row of 56 floats is
// 3.5 vectors of 16 lanes, and the 8 floats a 16-lane body left to the scalar loop were part of
// why AVX-512 ran these kernels slower than AVX2 on Zen 4 (docs/performance.md).
template <bool kMax>
HWY_INLINE void Fold(float* HWY_RESTRICT acc, const float* HWY_RESTRICT x, std::int64_t n) {
  std::int64_t i = FoldVectors<kMax>(hn::ScalableTag<float>(), acc, x, 0, n);
  i = FoldVectors<kMax>(hn::CappedTag<float, 8>(), acc, x, i, n);
  i = FoldVectors<kMax>(hn::CappedTag<float, 4>(), acc, x, i, n);
  for (; i < n; ++i) acc[i] = kMax ? MaxNanScalar(acc[i], x[i]) : acc[i] + x[i];
}

// out[ox] = max_nan(out[ox], r[2 ox]) or the sum, for ox in [ox, n) in whole vectors of tag d
// (each reads r up to 2 (ox + lanes) - 1); returns the first ox left.
template <bool kMax, class D>
HWY_INLINE std::int64_t FoldEven(D d, float* HWY_RESTRICT out, const float* HWY_RESTRICT r,
                                 std::int64_t ox, std::int64_t n) {
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  for (; ox + L <= n; ox += L) {
    hn::Vec<D> even, odd;
    hn::LoadInterleaved2(d, r + 2 * ox, even, odd);
    const auto a = hn::LoadU(d, out + ox);
    hn::StoreU(kMax ? MaxNan(d, a, even) : hn::Add(a, even), d, out + ox);
  }
  return ox;
}

// out[ox] = max_nan(out[ox], r[ox * s]) (kMax) or out[ox] + r[ox * s] for ox < n, s >= 1.
template <bool kMax>
HWY_INLINE void FoldStrided(float* HWY_RESTRICT out, const float* HWY_RESTRICT r, std::int64_t n,
                            std::int64_t s) {
  const hn::ScalableTag<float> d;
  std::int64_t ox = 0;
  if (s == 1) {
    Fold<kMax>(out, r, n);
    return;
  }
  if (s == 2) {  // even columns of interleaved pair loads, widest vectors first (FoldEven)
    ox = FoldEven<kMax>(d, out, r, ox, n);
    ox = FoldEven<kMax>(hn::CappedTag<float, 8>(), out, r, ox, n);
    ox = FoldEven<kMax>(hn::CappedTag<float, 4>(), out, r, ox, n);
  }
  for (; ox < n; ++ox) out[ox] = kMax ? MaxNanScalar(out[ox], r[ox * s]) : out[ox] + r[ox * s];
}

// One output row: the window rows of oy folded into row (from `init`), then the window columns
// folded into orow (from `init`); the stride-2 pair loads read 2 L floats from r + 2 ox, so
// columns whose load would leave the buffer go scalar.
template <bool kMax>
HWY_INLINE void PoolRow(const float* HWY_RESTRICT src, const PoolPlane& g, std::int64_t oy,
                        float init, float* HWY_RESTRICT row, float* HWY_RESTRICT orow) {
  float* cols = row + g.pw;  // row[pw + x]: the fold over the window's rows of input column x
  std::fill(row, row + g.buffer, init);
  for (std::int64_t u = 0; u < g.kh; ++u) {
    const std::int64_t iy = oy * g.sh - g.ph + u * g.dh;
    if (iy >= 0 && iy < g.h) Fold<kMax>(cols, src + iy * g.w, g.w);
  }
  std::fill(orow, orow + g.wo, init);
  for (std::int64_t v = 0; v < g.kw; ++v) {
    const float* r = row + v * g.dw;
    const std::int64_t room = g.buffer - v * g.dw;  // floats readable from r
    const std::int64_t safe = g.sw == 2 ? std::min(g.wo, room / 2) : g.wo;
    FoldStrided<kMax>(orow, r, safe, g.sw);
    for (std::int64_t ox = safe; ox < g.wo; ++ox) {
      orow[ox] = kMax ? MaxNanScalar(orow[ox], r[ox * g.sw]) : orow[ox] + r[ox * g.sw];
    }
  }
}

void MaxPoolPlaneImpl(const float* HWY_RESTRICT src, const PoolPlane& g, float* HWY_RESTRICT row,
                      float* HWY_RESTRICT out) {
  for (std::int64_t oy = 0; oy < g.ho; ++oy) {
    PoolRow<true>(src, g, oy, -std::numeric_limits<float>::infinity(), row, out + oy * g.wo);
  }
}

void AvgPoolPlaneImpl(const float* HWY_RESTRICT src, const PoolPlane& g,
                      const float* HWY_RESTRICT row_count, const float* HWY_RESTRICT col_count,
                      float divisor, float* HWY_RESTRICT row, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  float* div = row + g.buffer;
  for (std::int64_t oy = 0; oy < g.ho; ++oy) {
    float* orow = out + oy * g.wo;
    PoolRow<false>(src, g, oy, 0.0f, row, orow);
    const float rc = row_count[oy];
    for (std::int64_t ox = 0; ox < g.wo; ++ox) {
      const float v = divisor != 0.0f ? divisor : rc * col_count[ox];
      div[ox] = v == 0.0f ? 1.0f : v;
    }
    std::int64_t ox = 0;
    for (; ox + L <= g.wo; ox += L) {
      hn::StoreU(hn::Div(hn::LoadU(d, orow + ox), hn::LoadU(d, div + ox)), d, orow + ox);
    }
    for (; ox < g.wo; ++ox) orow[ox] /= div[ox];
  }
}

void FoldRows(bool max, const float* HWY_RESTRICT src, std::int64_t n, std::int64_t lo,
              std::int64_t hi, float* HWY_RESTRICT acc) {
  for (std::int64_t r = lo; r < hi; ++r) {
    if (max) {
      Fold<true>(acc, src + r * n, n);
    } else {
      Fold<false>(acc, src + r * n, n);
    }
  }
}

#if HWY_TARGET != HWY_SCALAR
// One four-float vector of a row: into its column sums c and into the row's partial sums p.
template <class D, class V>
HWY_INLINE void AddColumns(D d, const float* HWY_RESTRICT src, V& c, V& p) {
  const V v = hn::LoadU(d, src);
  c = hn::Add(c, v);
  p = hn::Add(p, v);
}

// K <= 4 four-float column vectors from column i over `count` rows: the column sums stay in
// registers across the rows (stored once per call, not once per row, whose store-to-load
// round trip bounded the loop), and each row's four partial sums (`part`, four floats per row)
// take the K vectors in column order, as a row-by-row sweep adds them. Named vectors, not an
// array: SVE's are sizeless.
template <int K>
HWY_INLINE void ColumnBlock(const float* HWY_RESTRICT src, std::int64_t count, std::int64_t w,
                            std::int64_t i, float* HWY_RESTRICT part, float* HWY_RESTRICT cols) {
  const hn::FixedTag<float, 4> d4;
  using V = hn::Vec<decltype(d4)>;
  V c0 = hn::LoadU(d4, cols + i), c1 = hn::Zero(d4), c2 = c1, c3 = c1;
  if constexpr (K > 1) c1 = hn::LoadU(d4, cols + i + 4);
  if constexpr (K > 2) c2 = hn::LoadU(d4, cols + i + 8);
  if constexpr (K > 3) c3 = hn::LoadU(d4, cols + i + 12);
  for (std::int64_t r = 0; r < count; ++r) {
    const float* HWY_RESTRICT row = src + r * w + i;
    V p = hn::Load(d4, part + 4 * r);
    AddColumns(d4, row, c0, p);
    if constexpr (K > 1) AddColumns(d4, row + 4, c1, p);
    if constexpr (K > 2) AddColumns(d4, row + 8, c2, p);
    if constexpr (K > 3) AddColumns(d4, row + 12, c3, p);
    hn::Store(p, d4, part + 4 * r);
  }
  hn::StoreU(c0, d4, cols + i);
  if constexpr (K > 1) hn::StoreU(c1, d4, cols + i + 4);
  if constexpr (K > 2) hn::StoreU(c2, d4, cols + i + 8);
  if constexpr (K > 3) hn::StoreU(c3, d4, cols + i + 12);
}
#endif

// Row means from four partial sums over i % 4 (then the tail in order) and column means in row
// order, as reference::row_column_means adds them. Rows go in chunks of 64, each swept in
// blocks of up to 16 columns (ColumnBlock).
void RowColumnMeans(const float* HWY_RESTRICT src, std::int64_t h, std::int64_t w,
                    float* HWY_RESTRICT rows, float* HWY_RESTRICT cols) {
  std::fill(cols, cols + w, 0.0f);
  const std::int64_t body = w - w % 4;
  constexpr std::int64_t kChunk = 64;
  alignas(16) float part[kChunk * 4];
  for (std::int64_t r0 = 0; r0 < h; r0 += kChunk) {
    const std::int64_t count = std::min(kChunk, h - r0);
    const float* HWY_RESTRICT chunk = src + r0 * w;
    std::fill(part, part + count * 4, 0.0f);
#if HWY_TARGET != HWY_SCALAR
    std::int64_t i = 0;
    for (; i + 16 <= body; i += 16) ColumnBlock<4>(chunk, count, w, i, part, cols);
    if (body - i == 12) ColumnBlock<3>(chunk, count, w, i, part, cols);
    if (body - i == 8) ColumnBlock<2>(chunk, count, w, i, part, cols);
    if (body - i == 4) ColumnBlock<1>(chunk, count, w, i, part, cols);
#else
    for (std::int64_t r = 0; r < count; ++r) {
      for (std::int64_t i = 0; i < body; ++i) {
        part[4 * r + i % 4] += chunk[r * w + i];
        cols[i] += chunk[r * w + i];
      }
    }
#endif
    for (std::int64_t r = 0; r < count; ++r) {
      const float* HWY_RESTRICT row = chunk + r * w;
      const float* p = part + 4 * r;
      float sum = (p[0] + p[1]) + (p[2] + p[3]);
      for (std::int64_t t = body; t < w; ++t) {
        sum += row[t];
        cols[t] += row[t];
      }
      rows[r0 + r] = sum / static_cast<float>(w);
    }
  }
  for (std::int64_t i = 0; i < w; ++i) cols[i] /= static_cast<float>(h);
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
