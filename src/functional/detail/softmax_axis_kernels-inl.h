// Per-target bodies of functional/detail/softmax_axis_kernels.hpp, compiled once for every
// Highway target by softmax_axis_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_AXIS_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_AXIS_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_AXIS_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_AXIS_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "functional/detail/softmax_axis_kernels.hpp"
#include "functional/detail/vector_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// e^v, meant for v = x - max <= 0: ShortExp (about 1 ulp) on v clamped to [-87, 88]; lanes
// below -87, where e^v < 1.7e-38 (a denormal or 0 in PyTorch), give 0, lanes above 88 +inf
// (only when the shift is not the maximum), NaN stays NaN.
template <class D, class V>
HWY_INLINE V ExpShifted(D d, V v) {
  const V lo = hn::Set(d, -87.0f), hi = hn::Set(d, 88.0f);
  const V e = ShortExp(d, hn::Min(hn::Max(v, lo), hi));
  const V big = hn::IfThenElse(hn::Gt(v, hi), hn::Inf(d), e);
  return hn::IfThenElse(hn::IsNaN(v), v, hn::IfThenZeroElse(hn::Lt(v, lo), big));
}

// Calls body(i, count) for the vectors covering [0, n): count = lanes except for a last partial
// vector, which the body reads and writes through LoadUpTo / StoreUpTo, so every element sees
// the same arithmetic.
template <class D, class Body>
HWY_INLINE void ForVectors(D d, std::int64_t n, const Body& body) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) body(i, lanes);
  if (i < n) body(i, n - i);
}

// count (<= lanes) floats of p: a plain load for a whole vector, else LoadTail (0 past them).
template <class D>
HWY_INLINE hn::VFromD<D> LoadUpTo(D d, const float* p, std::int64_t count) {
  return count == static_cast<std::int64_t>(hn::Lanes(d)) ? hn::LoadU(d, p) : LoadTail(d, p, count);
}

template <class D>
HWY_INLINE void StoreUpTo(D d, hn::VFromD<D> v, float* p, std::int64_t count) {
  if (count == static_cast<std::int64_t>(hn::Lanes(d))) return hn::StoreU(v, d, p);
  StoreTail(d, v, p, count);
}

void SoftmaxRowExact(const float* HWY_RESTRICT x, float* HWY_RESTRICT out, std::int64_t n,
                     bool log) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t full = n - n % lanes;
  const std::int64_t rest = n - full;
  // The partial last vector, padded with -inf (no effect on the max, e^-inf = 0 in the sum).
  HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)];
  hn::Store(hn::Set(d, -std::numeric_limits<float>::infinity()), d, tail);
  std::memcpy(tail, x + full, static_cast<std::size_t>(rest) * sizeof(float));
  auto vmax = hn::Load(d, tail);
  for (std::int64_t i = 0; i < full; i += lanes) vmax = hn::Max(vmax, hn::LoadU(d, x + i));
  const auto vm = hn::Set(d, hn::GetLane(hn::MaxOfLanes(d, vmax)));
  auto sum0 = hn::Zero(d), sum1 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 2 * lanes <= full; i += 2 * lanes) {  // two sums: the adds do not wait on each other
    const auto v0 = hn::Sub(hn::LoadU(d, x + i), vm);
    const auto v1 = hn::Sub(hn::LoadU(d, x + i + lanes), vm);
    const auto e0 = ExpShifted(d, v0), e1 = ExpShifted(d, v1);
    sum0 = hn::Add(sum0, e0);
    sum1 = hn::Add(sum1, e1);
    hn::StoreU(log ? v0 : e0, d, out + i);
    hn::StoreU(log ? v1 : e1, d, out + i + lanes);
  }
  for (; i < full; i += lanes) {
    const auto v = hn::Sub(hn::LoadU(d, x + i), vm);
    const auto e = ExpShifted(d, v);
    sum0 = hn::Add(sum0, e);
    hn::StoreU(log ? v : e, d, out + i);
  }
  const auto vt = hn::Sub(hn::Load(d, tail), vm);
  const auto et = ExpShifted(d, vt);
  // A padded lane is -inf - m: 0 in the sum unless m is -inf or NaN, when the row is NaN anyway.
  sum0 = hn::Add(sum0, hn::IfThenElseZero(hn::FirstN(d, static_cast<std::size_t>(rest)), et));
  if (rest > 0) StoreTail(d, log ? vt : et, out + full, rest);
  const float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1)));
  const auto c = hn::Set(d, log ? std::log(s) : 1.0f / s);
  for (i = 0; i < full; i += lanes) {
    const auto v = hn::LoadU(d, out + i);
    hn::StoreU(log ? hn::Sub(v, c) : hn::Mul(v, c), d, out + i);
  }
  if (rest > 0) {
    const auto v = LoadTail(d, out + full, rest);
    StoreTail(d, log ? hn::Sub(v, c) : hn::Mul(v, c), out + full, rest);
  }
}

void ExpShiftCols(const float* HWY_RESTRICT x, const float* HWY_RESTRICT m, float* out,
                  float* HWY_RESTRICT s, std::int64_t n, bool store_exp) {
  const hn::ScalableTag<float> d;
  ForVectors(d, n, [&](std::int64_t i, std::int64_t count) {
    const auto v = hn::Sub(LoadUpTo(d, x + i, count), LoadUpTo(d, m + i, count));
    const auto e = ExpShifted(d, v);
    StoreUpTo(d, hn::Add(LoadUpTo(d, s + i, count), e), s + i, count);
    StoreUpTo(d, store_exp ? e : v, out + i, count);
  });
}

void MaxCols(float* HWY_RESTRICT m, const float* HWY_RESTRICT x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  ForVectors(d, n, [&](std::int64_t i, std::int64_t count) {
    StoreUpTo(d, hn::Max(LoadUpTo(d, m + i, count), LoadUpTo(d, x + i, count)), m + i, count);
  });
}

void CombineCols(float* HWY_RESTRICT x, const float* HWY_RESTRICT a, std::int64_t n,
                 bool multiply) {
  const hn::ScalableTag<float> d;
  ForVectors(d, n, [&](std::int64_t i, std::int64_t count) {
    const auto v = LoadUpTo(d, x + i, count), w = LoadUpTo(d, a + i, count);
    StoreUpTo(d, multiply ? hn::Mul(v, w) : hn::Sub(v, w), x + i, count);
  });
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
