// Runtime dispatch of the plane reductions (reduce.hpp); the bodies are in reduce-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/reduce-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/reduce-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::detail {

HWY_EXPORT(PlaneMean);
HWY_EXPORT(PlaneMeanMax);
HWY_EXPORT(FirstMaxIndex);

float plane_mean(const float* p, std::int64_t n) { return CVATTN_DISPATCH(PlaneMean)(p, n); }

PlaneStats plane_mean_max(const float* p, std::int64_t n) {
  return CVATTN_DISPATCH(PlaneMeanMax)(p, n);
}

std::int64_t first_max_index(const float* p, std::int64_t n) {
  return CVATTN_DISPATCH(FirstMaxIndex)(p, n);
}

}  // namespace cvattn::detail
#endif
