// Runtime dispatch of affine_grid's rows (affine_grid_kernel.hpp); the body is in
// affine_grid_kernel-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/affine_grid_kernel-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/affine_grid_kernel-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"
#include "functional/detail/affine_grid_kernel.hpp"

namespace cvattn::detail {

HWY_EXPORT(AffineGridRows);
HWY_EXPORT(AffineGridRows3d);

void affine_grid_rows(const float* xs, const float* ys, std::int64_t rows, const float* theta,
                      float* out, std::int64_t w) {
  CVATTN_DISPATCH(AffineGridRows)(xs, ys, rows, theta, out, w);
}

void affine_grid_rows_3d(const float* xs, const float* ys, std::int64_t rows, float z,
                         const float* theta, float* out, std::int64_t w) {
  CVATTN_DISPATCH(AffineGridRows3d)(xs, ys, rows, z, theta, out, w);
}

}  // namespace cvattn::detail
#endif
