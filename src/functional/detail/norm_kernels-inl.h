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

// The blocks' sums of f(x[i]) for i < end, i from *i0 in steps of 16, added to *total in double.
template <int NV, class F>
HWY_INLINE void LaneBlocks(const float* HWY_RESTRICT x, std::int64_t n, std::int64_t* i0,
                           double* total, const F& f) {
  const MomentTag d;
  constexpr std::int64_t kMax = kMomentLanes;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = *i0;
  while (n - i >= kMax) {
    const std::int64_t end = i + std::min(kMomentBlock, (n - i) / kMax * kMax);
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
    for (; i < end; i += kMax) {
      a0 = hn::Add(a0, f(hn::LoadU(d, x + i)));
      if constexpr (NV > 1) a1 = hn::Add(a1, f(hn::LoadU(d, x + i + L)));
      if constexpr (NV > 2) {
        a2 = hn::Add(a2, f(hn::LoadU(d, x + i + 2 * L)));
        a3 = hn::Add(a3, f(hn::LoadU(d, x + i + 3 * L)));
      }
    }
    HWY_ALIGN float lanes[kMax];  // lanes 0..15 in order
    hn::Store(a0, d, lanes);
    if constexpr (NV > 1) hn::Store(a1, d, lanes + L);
    if constexpr (NV > 2) {
      hn::Store(a2, d, lanes + 2 * L);
      hn::Store(a3, d, lanes + 3 * L);
    }
    double block = 0.0;
    for (std::int64_t l = 0; l < kMax; ++l) block += static_cast<double>(lanes[l]);
    *total += block;
  }
  *i0 = i;
}

// sum over i < n of f(x[i]) by the blocked lane scheme; f maps a vector to a vector.
template <class F>
HWY_INLINE double LaneSum(const float* HWY_RESTRICT x, std::int64_t n, const F& f) {
  double total = 0.0;
  std::int64_t i = 0;
#if HWY_TARGET == HWY_SCALAR
  // One lane: the 16 lanes as floats, exactly the definition.
  constexpr std::int64_t kMax = kMomentLanes;
  const hn::CappedTag<float, 1> d1s;
  while (n - i >= kMax) {
    const std::int64_t end = i + std::min(kMomentBlock, (n - i) / kMax * kMax);
    float lanes[kMax] = {};
    for (; i < end; i += kMax) {
      for (std::int64_t l = 0; l < kMax; ++l) {
        lanes[l] += hn::GetLane(f(hn::Set(d1s, x[i + l])));
      }
    }
    double block = 0.0;
    for (std::int64_t l = 0; l < kMax; ++l) block += static_cast<double>(lanes[l]);
    total += block;
  }
#else
  const auto L = static_cast<std::int64_t>(hn::Lanes(MomentTag()));
  if (L >= kMomentLanes) {
    LaneBlocks<1>(x, n, &i, &total, f);
  } else if (2 * L >= kMomentLanes) {
    LaneBlocks<2>(x, n, &i, &total, f);
  } else {
    LaneBlocks<4>(x, n, &i, &total, f);
  }
#endif
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) total += static_cast<double>(hn::GetLane(f(hn::Set(d1, x[i]))));
  return total;
}

Moments RowMoments(const float* HWY_RESTRICT x, std::int64_t n, double eps) {
  const double count = static_cast<double>(n);
  const float m = static_cast<float>(LaneSum(x, n, [](auto v) { return v; }) / count);
  const double ss = LaneSum(x, n, [m](auto v) {
    const auto dv = hn::Sub(v, hn::Set(hn::DFromV<decltype(v)>(), m));
    return hn::Mul(dv, dv);
  });
  const double var = std::max(ss / count, 0.0);  // keeps NaN (NaN < 0 is false)
  Moments r;
  r.mean = m;
  r.rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
  return r;
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
