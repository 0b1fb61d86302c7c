// Per-target bodies of functional/detail/interp_kernels.hpp, compiled once for every Highway
// target by interp_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "functional/detail/interp_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void InterpBlend(const float* const* t, const float* HWY_RESTRICT w, int k, std::int64_t n,
                 float* HWY_RESTRICT o) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const float* HWY_RESTRICT t0 = t[0];
  const float* HWY_RESTRICT t1 = t[1];
  const auto w0 = hn::Set(d, w[0]), w1 = hn::Set(d, w[1]);
  std::int64_t x = 0;
  if (k == 2) {
    for (; x + L <= n; x += L) {
      const auto a = hn::Mul(w0, hn::LoadU(d, t0 + x));
      hn::StoreU(hn::Add(a, hn::Mul(w1, hn::LoadU(d, t1 + x))), d, o + x);
    }
    for (; x < n; ++x) o[x] = w[0] * t0[x] + w[1] * t1[x];
    return;
  }
  const float* HWY_RESTRICT t2 = t[2];
  const float* HWY_RESTRICT t3 = t[3];
  const auto w2 = hn::Set(d, w[2]), w3 = hn::Set(d, w[3]);
  for (; x + L <= n; x += L) {
    auto a = hn::Mul(w0, hn::LoadU(d, t0 + x));
    a = hn::Add(a, hn::Mul(w1, hn::LoadU(d, t1 + x)));
    a = hn::Add(a, hn::Mul(w2, hn::LoadU(d, t2 + x)));
    hn::StoreU(hn::Add(a, hn::Mul(w3, hn::LoadU(d, t3 + x))), d, o + x);
  }
  for (; x < n; ++x) o[x] = w[0] * t0[x] + w[1] * t1[x] + w[2] * t2[x] + w[3] * t3[x];
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
