// Runtime dispatch of the pointwise convolution kernel (pointwise_kernels.hpp); the bodies are in
// pointwise_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/pointwise_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/pointwise_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(PointwiseAct);
HWY_EXPORT(PointwisePreferredMaxK);

std::int64_t pointwise_preferred_max_k() { return CVATTN_DISPATCH(PointwisePreferredMaxK)(); }

void pointwise_act(ActLayer act, const float* w, std::int64_t m, std::int64_t k, const float* x,
                   std::int64_t ldx, std::int64_t n, const float* bias, float* out,
                   std::int64_t ldo) {
  CVATTN_CHECK(k >= 0 && k <= kPointwiseMaxK && m >= 0 && n >= 0, ValueError, "pointwise_act", ": ",
               m, " x ", k, " weights over ", n, " positions (at most ", kPointwiseMaxK,
               " input channels)");
  if (m == 0 || n == 0) return;
  CVATTN_DISPATCH(PointwiseAct)(act, w, m, k, x, ldx, n, bias, out, ldo);
}

}  // namespace cvattn::functional::detail
#endif
