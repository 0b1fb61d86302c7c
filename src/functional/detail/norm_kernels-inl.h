// Per-target bodies of functional/detail/norm_kernels.hpp, compiled once for every Highway target
// by norm_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_NORM_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_NORM_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_NORM_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_NORM_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "functional/detail/norm_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The 16 float lanes of norm_kernels.hpp as NV = 16 / L vectors of L lanes (L is a power of two
// from 4 to 16 on every SIMD target: Highway's SVE tags use a power-of-two length), so each lane
// sums the same elements in the same order as the definition. Named accumulators, not an
// array: SVE vectors are sizeless.
using MomentTag = hn::CappedTag<float, static_cast<std::size_t>(kMomentLanes)>;

// The blocks' sums of f(x[i]) (and, for R = 2, of g(y[i])) for i < end, i from *i0 in steps of
// 16, added to *total_x (*total_y) in double. Two rows run side by side as two independent
// chains: one row's chain of dependent adds leaves most of the core idle on rows of a few
// hundred floats.
template <int R, int NV, class F, class G>
HWY_INLINE void LaneBlocks(const float* HWY_RESTRICT x, const float* HWY_RESTRICT y, std::int64_t n,
                           std::int64_t* i0, double* total_x, double* total_y, const F& f,
                           const G& g) {
  const MomentTag d;
  constexpr std::int64_t kMax = kMomentLanes;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = *i0;
  while (n - i >= kMax) {
    const std::int64_t end = i + std::min(kMomentBlock, (n - i) / kMax * kMax);
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
    auto b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (; i < end; i += kMax) {
      a0 = hn::Add(a0, f(hn::LoadU(d, x + i)));
      if constexpr (R > 1) b0 = hn::Add(b0, g(hn::LoadU(d, y + i)));
      if constexpr (NV > 1) {
        a1 = hn::Add(a1, f(hn::LoadU(d, x + i + L)));
        if constexpr (R > 1) b1 = hn::Add(b1, g(hn::LoadU(d, y + i + L)));
      }
      if constexpr (NV > 2) {
        a2 = hn::Add(a2, f(hn::LoadU(d, x + i + 2 * L)));
        a3 = hn::Add(a3, f(hn::LoadU(d, x + i + 3 * L)));
        if constexpr (R > 1) {
          b2 = hn::Add(b2, g(hn::LoadU(d, y + i + 2 * L)));
          b3 = hn::Add(b3, g(hn::LoadU(d, y + i + 3 * L)));
        }
      }
    }
    HWY_ALIGN float lanes[R][kMax];  // lanes 0..15 of each row in order
    hn::Store(a0, d, lanes[0]);
    if constexpr (NV > 1) hn::Store(a1, d, lanes[0] + L);
    if constexpr (NV > 2) {
      hn::Store(a2, d, lanes[0] + 2 * L);
      hn::Store(a3, d, lanes[0] + 3 * L);
    }
    if constexpr (R > 1) {
      hn::Store(b0, d, lanes[R - 1]);
      if constexpr (NV > 1) hn::Store(b1, d, lanes[R - 1] + L);
      if constexpr (NV > 2) {
        hn::Store(b2, d, lanes[R - 1] + 2 * L);
        hn::Store(b3, d, lanes[R - 1] + 3 * L);
      }
    }
    double block_x = 0.0, block_y = 0.0;
    for (std::int64_t l = 0; l < kMax; ++l) {
      block_x += static_cast<double>(lanes[0][l]);
      if constexpr (R > 1) block_y += static_cast<double>(lanes[R - 1][l]);
    }
    *total_x += block_x;
    if constexpr (R > 1) *total_y += block_y;
  }
  *i0 = i;
}

// The sums over i < n of f(x[i]) and, for R = 2, of g(y[i]) by the blocked lane scheme; f and g
// map a vector to a vector.
template <int R, class F, class G>
HWY_INLINE void LaneSums(const float* HWY_RESTRICT x, const float* HWY_RESTRICT y, std::int64_t n,
                         const F& f, const G& g, double* sum_x, double* sum_y) {
  double total_x = 0.0;
  std::int64_t i = 0;
  const hn::CappedTag<float, 1> d1;
#if HWY_TARGET == HWY_SCALAR
  if constexpr (R > 1) LaneSums<1>(y, y, n, g, g, sum_y, sum_y);
  // One lane: the 16 lanes as floats, exactly the definition.
  constexpr std::int64_t kMax = kMomentLanes;
  while (n - i >= kMax) {
    const std::int64_t end = i + std::min(kMomentBlock, (n - i) / kMax * kMax);
    float lanes[kMax] = {};
    for (; i < end; i += kMax) {
      for (std::int64_t l = 0; l < kMax; ++l) {
        lanes[l] += hn::GetLane(f(hn::Set(d1, x[i + l])));
      }
    }
    double block = 0.0;
    for (std::int64_t l = 0; l < kMax; ++l) block += static_cast<double>(lanes[l]);
    total_x += block;
  }
  for (; i < n; ++i) total_x += static_cast<double>(hn::GetLane(f(hn::Set(d1, x[i]))));
#else
  double total_y = 0.0;
  const auto L = static_cast<std::int64_t>(hn::Lanes(MomentTag()));
  if (L >= kMomentLanes) {
    LaneBlocks<R, 1>(x, y, n, &i, &total_x, &total_y, f, g);
  } else if (2 * L >= kMomentLanes) {
    LaneBlocks<R, 2>(x, y, n, &i, &total_x, &total_y, f, g);
  } else {
    LaneBlocks<R, 4>(x, y, n, &i, &total_x, &total_y, f, g);
  }
  for (; i < n; ++i) {
    total_x += static_cast<double>(hn::GetLane(f(hn::Set(d1, x[i]))));
    if constexpr (R > 1) total_y += static_cast<double>(hn::GetLane(g(hn::Set(d1, y[i]))));
  }
  if constexpr (R > 1) *sum_y = total_y;
#endif
  *sum_x = total_x;
}

// RowMoments of row x and, for R = 2, of row y (side by side, the same values).
template <int R>
HWY_INLINE void RowMomentsOf(const float* HWY_RESTRICT x, const float* HWY_RESTRICT y,
                             std::int64_t n, double eps, Moments* mx, Moments* my) {
  const double count = static_cast<double>(n);
  const auto same = [](auto v) { return v; };
  double sum_x = 0.0, sum_y = 0.0;
  LaneSums<R>(x, y, n, same, same, &sum_x, &sum_y);
  const float m_x = static_cast<float>(sum_x / count), m_y = static_cast<float>(sum_y / count);
  const auto square_about = [](float m) {
    return [m](auto v) {
      const auto dv = hn::Sub(v, hn::Set(hn::DFromV<decltype(v)>(), m));
      return hn::Mul(dv, dv);
    };
  };
  double ss_x = 0.0, ss_y = 0.0;
  LaneSums<R>(x, y, n, square_about(m_x), square_about(m_y), &ss_x, &ss_y);
  const auto finish = [&](float m, double ss, Moments* out) {
    const double var = std::max(ss / count, 0.0);  // keeps NaN (NaN < 0 is false)
    out->mean = m;
    out->rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
  };
  finish(m_x, ss_x, mx);
  if constexpr (R > 1) finish(m_y, ss_y, my);
}

Moments RowMoments(const float* HWY_RESTRICT x, std::int64_t n, double eps) {
  Moments m;
  RowMomentsOf<1>(x, x, n, eps, &m, &m);
  return m;
}

template <bool kW, bool kB>
HWY_INLINE void NormalizeLoop(const float* HWY_RESTRICT in, float* HWY_RESTRICT out, std::int64_t n,
                              float scale, float shift, const float* HWY_RESTRICT w,
                              const float* HWY_RESTRICT b) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto one = [&](auto dd, std::int64_t i) HWY_ATTR {
    auto v = hn::MulAdd(hn::LoadU(dd, in + i), hn::Set(dd, scale), hn::Set(dd, shift));
    if constexpr (kW && kB) {
      v = hn::MulAdd(v, hn::LoadU(dd, w + i), hn::LoadU(dd, b + i));
    } else if constexpr (kW) {
      v = hn::Mul(v, hn::LoadU(dd, w + i));
    } else if constexpr (kB) {
      v = hn::Add(v, hn::LoadU(dd, b + i));
    }
    hn::StoreU(v, dd, out + i);
  };
  std::int64_t i = 0;
  for (; i + L <= n; i += L) one(d, i);
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) one(d1, i);
}

void NormalizeRow(const float* HWY_RESTRICT in, float* HWY_RESTRICT out, std::int64_t n, Moments m,
                  const float* HWY_RESTRICT w, const float* HWY_RESTRICT b) {
  const float scale = m.rstd, shift = -m.mean * m.rstd;
  if (w != nullptr && b != nullptr) {
    NormalizeLoop<true, true>(in, out, n, scale, shift, w, b);
  } else if (w != nullptr) {
    NormalizeLoop<true, false>(in, out, n, scale, shift, w, b);
  } else if (b != nullptr) {
    NormalizeLoop<false, true>(in, out, n, scale, shift, w, b);
  } else {
    NormalizeLoop<false, false>(in, out, n, scale, shift, w, b);
  }
}

void LayerNormRows(const float* HWY_RESTRICT in, float* HWY_RESTRICT out, std::int64_t rows,
                   std::int64_t n, const float* HWY_RESTRICT w, const float* HWY_RESTRICT b,
                   double eps) {
  std::int64_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    Moments m0, m1;
    RowMomentsOf<2>(in + r * n, in + (r + 1) * n, n, eps, &m0, &m1);
    NormalizeRow(in + r * n, out + r * n, n, m0, w, b);
    NormalizeRow(in + (r + 1) * n, out + (r + 1) * n, n, m1, w, b);
  }
  if (r < rows) NormalizeRow(in + r * n, out + r * n, n, RowMoments(in + r * n, n, eps), w, b);
}

// acc[p] += f(row, p) as doubles for p < len: vectors of double, the floats promoted.
template <class F>
HWY_INLINE void AccumulateDouble(double* HWY_RESTRICT acc, std::int64_t len, const F& f) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const auto L = static_cast<std::int64_t>(hn::Lanes(dd));
  std::int64_t p = 0;
  for (; p + L <= len; p += L) {
    hn::StoreU(hn::Add(hn::LoadU(dd, acc + p), hn::PromoteTo(dd, f(df, p))), dd, acc + p);
  }
  const hn::CappedTag<double, 1> d1;
  const hn::Rebind<float, decltype(d1)> f1;
  for (; p < len; ++p) {
    hn::StoreU(hn::Add(hn::LoadU(d1, acc + p), hn::PromoteTo(d1, f(f1, p))), d1, acc + p);
  }
}

// out[p] = f(p) for p < len by float vectors, single lanes for the tail.
template <class F>
HWY_INLINE void ForPixels(float* HWY_RESTRICT out, std::int64_t len, const F& f) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t p = 0;
  for (; p + L <= len; p += L) hn::StoreU(f(d, p), d, out + p);
  const hn::CappedTag<float, 1> d1;
  for (; p < len; ++p) hn::StoreU(f(d1, p), d1, out + p);
}

void LayerNorm2dTile(const float* HWY_RESTRICT in, float* HWY_RESTRICT out, std::int64_t c,
                     std::int64_t hw, std::int64_t len, const float* HWY_RESTRICT w,
                     const float* HWY_RESTRICT b, double eps) {
  constexpr std::int64_t kTile = kChannelsFirstTile;
  const double count = static_cast<double>(c);
  HWY_ALIGN double sum[kTile] = {};
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const float* row = in + ch * hw;
    AccumulateDouble(sum, len,
                     [&](auto df, std::int64_t p) HWY_ATTR { return hn::LoadU(df, row + p); });
  }
  HWY_ALIGN float mean[kTile];
  for (std::int64_t p = 0; p < len; ++p) mean[p] = static_cast<float>(sum[p] / count);
  HWY_ALIGN double ss[kTile] = {};
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const float* row = in + ch * hw;
    AccumulateDouble(ss, len, [&](auto df, std::int64_t p) HWY_ATTR {
      const auto dv = hn::Sub(hn::LoadU(df, row + p), hn::LoadU(df, mean + p));
      return hn::Mul(dv, dv);
    });
  }
  HWY_ALIGN float scale[kTile], shift[kTile];
  for (std::int64_t p = 0; p < len; ++p) {
    const double var = std::max(ss[p] / count, 0.0);  // keeps NaN
    scale[p] = static_cast<float>(1.0 / std::sqrt(var + eps));
    shift[p] = -mean[p] * scale[p];
  }
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const float* row = in + ch * hw;
    const float wv = w != nullptr ? w[ch] : 1.0f;
    const float bv = b != nullptr ? b[ch] : 0.0f;
    ForPixels(out + ch * hw, len, [&](auto d, std::int64_t p) HWY_ATTR {
      const auto v =
          hn::MulAdd(hn::LoadU(d, row + p), hn::LoadU(d, scale + p), hn::LoadU(d, shift + p));
      return hn::MulAdd(v, hn::Set(d, wv), hn::Set(d, bv));
    });
  }
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
