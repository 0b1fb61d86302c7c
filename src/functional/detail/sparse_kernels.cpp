// Runtime dispatch of the sparse/local attention products (sparse_kernels.hpp); the bodies are
// in sparse_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/sparse_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/sparse_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"
#include "functional/detail/sparse_kernels.hpp"

namespace cvattn::detail {

HWY_EXPORT(LocalScoresRow);
HWY_EXPORT(LocalSumRow);
HWY_EXPORT(GatheredDots);
HWY_EXPORT(GatheredWeightedSum);
HWY_EXPORT(NanAsLowest);
HWY_EXPORT(ValuesAtLeast);
HWY_EXPORT(IndicesWhere);

void local_scores_row(const float* q, std::int64_t q_cs, const float* k, std::int64_t k_cs,
                      std::int64_t k_rs, std::int64_t C, std::int64_t W, std::int64_t D,
                      std::int64_t dy_lo, std::int64_t dy_hi, float* scores) {
  CVATTN_DISPATCH(LocalScoresRow)(q, q_cs, k, k_cs, k_rs, C, W, D, dy_lo, dy_hi, scores);
}

void local_sum_row(const float* w, const float* v, std::int64_t v_cs, std::int64_t v_rs,
                   std::int64_t Cv, std::int64_t W, std::int64_t D, std::int64_t dy_lo,
                   std::int64_t dy_hi, float* out, std::int64_t out_cs) {
  CVATTN_DISPATCH(LocalSumRow)(w, v, v_cs, v_rs, Cv, W, D, dy_lo, dy_hi, out, out_cs);
}

void gathered_dots(const float* q, const float* k, std::int64_t E, const std::int32_t* idx,
                   std::int64_t count, float* out) {
  CVATTN_DISPATCH(GatheredDots)(q, k, E, idx, count, out);
}

void gathered_weighted_sum(const float* w, const float* v, std::int64_t Ev, const std::int32_t* idx,
                           std::int64_t count, float* out) {
  CVATTN_DISPATCH(GatheredWeightedSum)(w, v, Ev, idx, count, out);
}

void nan_as_lowest(const float* s, std::int64_t n, float* vals) {
  CVATTN_DISPATCH(NanAsLowest)(s, n, vals);
}

std::int64_t values_at_least(const float* vals, std::int64_t n, float bound, float* out) {
  return CVATTN_DISPATCH(ValuesAtLeast)(vals, n, bound, out);
}

std::int64_t indices_where(const float* vals, std::int64_t n, float thr, bool above,
                           std::int32_t* out, std::int64_t limit) {
  return CVATTN_DISPATCH(IndicesWhere)(vals, n, thr, above, out, limit);
}

}  // namespace cvattn::detail
#endif
