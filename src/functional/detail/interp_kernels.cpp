// Runtime dispatch of interpolate's blend along H (interp_kernels.hpp); bodies in
// interp_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/interp_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/interp_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(InterpBlend);

void interp_blend(const float* const* t, const float* w, int k, std::int64_t n, float* o) {
  CVATTN_DISPATCH(InterpBlend)(t, w, k, n, o);
}

}  // namespace cvattn::functional::detail
#endif
