// Runtime dispatch of the normalisation row kernels (norm_kernels.hpp); bodies in
// norm_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/norm_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/norm_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(RowMoments);
HWY_EXPORT(NormalizeRow);
HWY_EXPORT(LayerNormRows);
HWY_EXPORT(LayerNorm2dTile);

Moments moments(const float* x, std::int64_t n, double eps) {
  return CVATTN_DISPATCH(RowMoments)(x, n, eps);
}

void normalize_row(const float* in, float* out, std::int64_t n, Moments m, const float* w,
                   const float* b) {
  CVATTN_DISPATCH(NormalizeRow)(in, out, n, m, w, b);
}

void layer_norm_rows(const float* in, float* out, std::int64_t rows, std::int64_t n, const float* w,
                     const float* b, double eps) {
  CVATTN_DISPATCH(LayerNormRows)(in, out, rows, n, w, b, eps);
}

void layer_norm2d_tile(const float* in, float* out, std::int64_t c, std::int64_t hw,
                       std::int64_t len, const float* w, const float* b, double eps) {
  CVATTN_DISPATCH(LayerNorm2dTile)(in, out, c, hw, len, w, b, eps);
}

}  // namespace cvattn::functional::detail
#endif
