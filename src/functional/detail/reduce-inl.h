// Per-target bodies of functional/detail/reduce.hpp, compiled once for every Highway target by
// reduce.cpp (no include guard of the usual kind: the toggle below is Highway's convention).
#if defined(CVATTN_FUNCTIONAL_DETAIL_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_REDUCE_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_REDUCE_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_REDUCE_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "functional/detail/reduce.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum (and, with kMax, the max) of p[0, n): four vector accumulators per block of
// kReduceBlock elements, folded into a double; then the whole vectors after the last group of
// four, folded likewise; the last n mod lanes elements are added in double.
template <bool kMax>
PlaneStats ReducePlane(const float* HWY_RESTRICT p, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t group = 4 * lanes;
  const std::int64_t vec_end = n - n % group;
  double total = 0.0;
  auto m0 = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m1 = m0, m2 = m0, m3 = m0;
  std::int64_t i = 0;
  while (i < vec_end) {
    const std::int64_t block_end = std::min(vec_end, i + kReduceBlock);
    auto s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
    for (; i < block_end; i += group) {
      const auto a = hn::LoadU(d, p + i), b = hn::LoadU(d, p + i + lanes),
                 c = hn::LoadU(d, p + i + 2 * lanes), e = hn::LoadU(d, p + i + 3 * lanes);
      s0 = hn::Add(s0, a);
      s1 = hn::Add(s1, b);
      s2 = hn::Add(s2, c);
      s3 = hn::Add(s3, e);
      if constexpr (kMax) {
        m0 = hn::Max(m0, a);
        m1 = hn::Max(m1, b);
        m2 = hn::Max(m2, c);
        m3 = hn::Max(m3, e);
      }
    }
    total += static_cast<double>(
        hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)))));
  }
  // The whole vectors after the last group, one at a time: a 28x28 plane has 16 floats there,
  // and 16 dependent double additions cost as much as the 48 vectors before them.
  if (i + lanes <= n) {
    auto s0 = hn::Zero(d);
    for (; i + lanes <= n; i += lanes) {
      const auto a = hn::LoadU(d, p + i);
      s0 = hn::Add(s0, a);
      if constexpr (kMax) m0 = hn::Max(m0, a);
    }
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, s0)));
  }
  float mx = -std::numeric_limits<float>::infinity();
  if constexpr (kMax) {
    mx = hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  }
  for (; i < n; ++i) {
    total += p[i];
    if constexpr (kMax) mx = p[i] > mx ? p[i] : mx;
  }
  // Vector max skips NaN on some targets; a NaN always reaches the sum, so a NaN sum (or
  // inf - inf) rescans for the NaN torch.amax returns.
  if (kMax && std::isnan(total)) {
    for (std::int64_t k = 0; k < n; ++k) {
      if (std::isnan(p[k])) mx = p[k];
    }
  }
  return {static_cast<float>(total / static_cast<double>(n)), mx};
}

inline float PlaneMean(const float* p, std::int64_t n) { return ReducePlane<false>(p, n).mean; }
inline PlaneStats PlaneMeanMax(const float* p, std::int64_t n) { return ReducePlane<true>(p, n); }

// Two passes: the max of the non-NaN values (NaN lanes replaced by -inf, so that no target's Max
// sees a NaN), then the first index equal to it (NaN equals nothing; -0 equals +0).
inline std::int64_t FirstMaxIndex(const float* HWY_RESTRICT p, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto low = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m0 = low, m1 = low;
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto a = hn::LoadU(d, p + i), b = hn::LoadU(d, p + i + lanes);
    m0 = hn::Max(m0, hn::IfThenElse(hn::Eq(a, a), a, low));
    m1 = hn::Max(m1, hn::IfThenElse(hn::Eq(b, b), b, low));
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  for (; i < n; ++i) m = p[i] > m ? p[i] : m;  // false for NaN
  const auto vm = hn::Set(d, m);
  std::int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const std::intptr_t k = hn::FindFirstTrue(d, hn::Eq(hn::LoadU(d, p + j), vm));
    if (k >= 0) return j + static_cast<std::int64_t>(k);
  }
  for (; j < n; ++j) {
    if (p[j] == m) return j;
  }
  return 0;
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
