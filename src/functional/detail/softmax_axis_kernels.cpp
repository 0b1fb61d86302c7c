// Runtime dispatch of softmax_axis_kernels.hpp; the bodies are in softmax_axis_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/softmax_axis_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/softmax_axis_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::detail {

HWY_EXPORT(SoftmaxRowExact);
HWY_EXPORT(ExpShiftCols);
HWY_EXPORT(MaxCols);
HWY_EXPORT(CombineCols);

void softmax_row_exact(const float* x, float* out, std::int64_t n, bool log) {
  CVATTN_DISPATCH(SoftmaxRowExact)(x, out, n, log);
}

void exp_shift_cols(const float* x, const float* m, float* out, float* s, std::int64_t n,
                    bool store_exp) {
  CVATTN_DISPATCH(ExpShiftCols)(x, m, out, s, n, store_exp);
}

void max_cols(float* m, const float* x, std::int64_t n) { CVATTN_DISPATCH(MaxCols)(m, x, n); }

void combine_cols(float* x, const float* a, std::int64_t n, bool multiply) {
  CVATTN_DISPATCH(CombineCols)(x, a, n, multiply);
}

}  // namespace cvattn::detail
#endif
