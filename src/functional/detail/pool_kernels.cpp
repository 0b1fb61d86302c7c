// Runtime dispatch of the pooling plane kernels (pool_kernels.hpp); bodies in pool_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/pool_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/pool_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(MaxPoolPlaneImpl);
HWY_EXPORT(AvgPoolPlaneImpl);
HWY_EXPORT(FoldRows);
HWY_EXPORT(RowColumnMeans);

void max_pool_plane(const float* src, const PoolPlane& g, float* row, float* out) {
  CVATTN_DISPATCH(MaxPoolPlaneImpl)(src, g, row, out);
}

void avg_pool_plane(const float* src, const PoolPlane& g, const float* row_count,
                    const float* col_count, float divisor, float* row, float* out) {
  CVATTN_DISPATCH(AvgPoolPlaneImpl)(src, g, row_count, col_count, divisor, row, out);
}

void fold_rows(bool max, const float* src, std::int64_t n, std::int64_t lo, std::int64_t hi,
               float* acc) {
  CVATTN_DISPATCH(FoldRows)(max, src, n, lo, hi, acc);
}

void row_column_means(const float* src, std::int64_t h, std::int64_t w, float* rows, float* cols) {
  CVATTN_DISPATCH(RowColumnMeans)(src, h, w, rows, cols);
}

}  // namespace cvattn::functional::detail
#endif
