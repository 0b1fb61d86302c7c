// Runtime dispatch of the softmax row primitives (softmax.hpp); the bodies are in softmax-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/softmax-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/softmax-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::detail {

HWY_EXPORT(Softmax2Numerator);
HWY_EXPORT(Softmax2NumeratorUnmasked);
HWY_EXPORT(AdditiveScore);
HWY_EXPORT(AdditiveScores);
HWY_EXPORT(RowMax);
HWY_EXPORT(MinOfBlockMaxima);
HWY_EXPORT(ScaleInto);
HWY_EXPORT(ScaleAddInto);
HWY_EXPORT(SoftmaxRow);

float softmax2_numerator(float* x, std::int64_t n, const float* mask, std::int64_t mask_step,
                         std::int64_t allowed, const float* known_max) {
  return CVATTN_DISPATCH(Softmax2Numerator)(x, n, mask, mask_step, allowed, known_max);
}

float softmax2_numerator_unmasked(float* x, std::int64_t n, float m) {
  return CVATTN_DISPATCH(Softmax2NumeratorUnmasked)(x, n, m);
}

float additive_score(const float* x, const float* y, const float* v, std::int64_t n) {
  return CVATTN_DISPATCH(AdditiveScore)(x, y, v, n);
}

void additive_scores(const float* x, const float* y, std::int64_t y_stride, const float* v,
                     std::int64_t n, std::int64_t count, float* out) {
  CVATTN_DISPATCH(AdditiveScores)(x, y, y_stride, v, n, count, out);
}

float row_max(const float* x, std::int64_t n) { return CVATTN_DISPATCH(RowMax)(x, n); }

float min_of_block_maxima(const float* x, std::int64_t blocks, std::int64_t block) {
  return CVATTN_DISPATCH(MinOfBlockMaxima)(x, blocks, block);
}

void scale_into(const float* x, std::int64_t n, float a, float* dst) {
  CVATTN_DISPATCH(ScaleInto)(x, n, a, dst);
}

void scale_add_into(const float* x, std::int64_t n, float a, float* dst) {
  CVATTN_DISPATCH(ScaleAddInto)(x, n, a, dst);
}

void softmax_row(float* x, std::int64_t n, float scale, const float* mask, std::int64_t mask_step,
                 std::int64_t allowed) {
  CVATTN_DISPATCH(SoftmaxRow)(x, n, scale, mask, mask_step, allowed);
}

}  // namespace cvattn::detail
#endif
