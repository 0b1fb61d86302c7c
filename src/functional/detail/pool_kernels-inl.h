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

// acc[i] = max_nan(acc[i], x[i]) or acc[i] + x[i] for i < n.
template <bool kMax>
HWY_INLINE void Fold(float* HWY_RESTRICT acc, const float* HWY_RESTRICT x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto a = hn::LoadU(d, acc + i), b = hn::LoadU(d, x + i);
    hn::StoreU(kMax ? MaxNan(d, a, b) : hn::Add(a, b), d, acc + i);
  }
  for (; i < n; ++i) acc[i] = kMax ? MaxNanScalar(acc[i], x[i]) : acc[i] + x[i];
}

// out[ox] = max_nan(out[ox], r[ox * s]) (kMax) or out[ox] + r[ox * s] for ox < n, s >= 1.
template <bool kMax>
HWY_INLINE void FoldStrided(float* HWY_RESTRICT out, const float* HWY_RESTRICT r, std::int64_t n,
                            std::int64_t s) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t ox = 0;
  if (s == 1) {
    Fold<kMax>(out, r, n);
    return;
  }
  if (s == 2) {  // even columns of an interleaved pair load (reads r up to 2 (ox + L) - 1)
    for (; ox + L <= n; ox += L) {
      hn::Vec<decltype(d)> even, odd;
      hn::LoadInterleaved2(d, r + 2 * ox, even, odd);
      const auto a = hn::LoadU(d, out + ox);
      hn::StoreU(kMax ? MaxNan(d, a, even) : hn::Add(a, even), d, out + ox);
    }
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

void RowColumnMeans(const float* HWY_RESTRICT src, std::int64_t h, std::int64_t w,
                    float* HWY_RESTRICT rows, float* HWY_RESTRICT cols) {
  std::fill(cols, cols + w, 0.0f);
  for (std::int64_t r = 0; r < h; ++r) {
    const float* HWY_RESTRICT row = src + r * w;
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::FixedTag<float, 4> d4;
    auto acc = hn::Zero(d4);
    for (; i + 4 <= w; i += 4) {
      const auto v = hn::LoadU(d4, row + i);
      acc = hn::Add(acc, v);
      hn::StoreU(hn::Add(hn::LoadU(d4, cols + i), v), d4, cols + i);
    }
    hn::StoreU(acc, d4, part);
#else
    for (; i + 4 <= w; i += 4) {
      for (int j = 0; j < 4; ++j) {
        part[j] += row[i + j];
        cols[i + j] += row[i + j];
      }
    }
#endif
    float sum = (part[0] + part[1]) + (part[2] + part[3]);
    for (; i < w; ++i) {
      sum += row[i];
      cols[i] += row[i];
    }
    rows[r] = sum / static_cast<float>(w);
  }
  for (std::int64_t i = 0; i < w; ++i) cols[i] /= static_cast<float>(h);
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
