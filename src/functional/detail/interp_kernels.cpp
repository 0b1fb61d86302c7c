// Runtime dispatch of interpolate's planes kernel (interp_kernels.hpp); bodies in
// interp_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/interp_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/interp_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(InterpPlanes);

void interp_planes(const float* in, std::int64_t planes, std::int64_t h, std::int64_t w,
                   const InterpAxis& tx, const InterpAxis& ty, const unsigned char* used,
                   float* tmp, float* out) {
  CVATTN_DISPATCH(InterpPlanes)(in, planes, h, w, tx, ty, used, tmp, out);
}

}  // namespace cvattn::functional::detail
#endif
