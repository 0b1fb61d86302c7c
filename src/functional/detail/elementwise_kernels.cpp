// Runtime dispatch of the binary-op rows, bias fill and column sums (elementwise_kernels.hpp); the
// bodies are in elementwise_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/elementwise_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/elementwise_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::detail {

HWY_EXPORT(BinaryRowsKernel);
HWY_EXPORT(ColumnSumsKernel);
HWY_EXPORT(FillRowsKernel);
HWY_EXPORT(WeightedSumRows);

void binary_row(BinaryOp op, const float* a, std::int64_t sa, const float* b, std::int64_t sb,
                float* out, std::int64_t n) {
  const std::int64_t origin = 0;  // one row at a and b themselves
  binary_rows(op, a, &origin, sa, b, &origin, sb, out, n, 1);
}

void binary_rows(BinaryOp op, const float* a, const std::int64_t* a_off, std::int64_t sa,
                 const float* b, const std::int64_t* b_off, std::int64_t sb, float* out,
                 std::int64_t n, std::int64_t rows) {
  CVATTN_DISPATCH(BinaryRowsKernel)(op, a, a_off, sa, b, b_off, sb, out, n, rows);
}

void fill_rows(float* out, std::int64_t rows, std::int64_t cols, std::int64_t stride,
               const float* values) {
  CVATTN_DISPATCH(FillRowsKernel)(out, rows, cols, stride, values);
}

void weighted_sum_rows(const float* rows, std::int64_t k, std::int64_t stride, const float* weights,
                       float* out, std::int64_t n) {
  CVATTN_DISPATCH(WeightedSumRows)(rows, k, stride, weights, out, n);
}

void column_sums(const float* base, std::int64_t stride, std::int64_t rows, std::int64_t n,
                 double* acc) {
  CVATTN_DISPATCH(ColumnSumsKernel)(base, stride, rows, n, acc);
}

}  // namespace cvattn::detail
#endif
