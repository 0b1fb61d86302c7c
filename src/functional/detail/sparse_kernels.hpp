#pragma once
// The products of local_attention, attend_selected and select_keys' re-ranking, and the scans of
// its exact top-k
// (functional/sparse_attention.cpp): the local-window scores and weighted sums of one pixel row,
// and the dot products and weighted sums over gathered key/value rows. Dispatched at run time to
// the best SIMD target (sparse_kernels-inl.h); the reference twin is
// functional/reference/sparse_kernels.hpp. Private to cvattn; callers validate everything first.
//
// Rounding: each output is one sum accumulated in a fixed order with a fused multiply-add where
// the target has one (two roundings elsewhere); the gathered dot products split their sums over
// vector lanes. Results therefore differ from a sequential float sum by reassociation only.
#include <cstdint>

namespace cvattn::detail {

// Local-window scores of one pixel row. q points at channel 0 of the row (x = 0), channel stride
// q_cs. k points at channel 0, row y, x = 0 of a row-padded key map: rows of at least W + 2D
// floats with D readable floats before x = 0 and after x = W - 1 (padding values are arbitrary
// but readable), channel stride k_cs, row stride k_rs. For dy in [dy_lo, dy_hi] (the rows inside
// the image), dx in [-D, D] and x in [0, W):
//   scores[((dy + D) * (2D + 1) + dx + D) * W + x] = sum_c q[c*q_cs + x] * k[c*k_cs + dy*k_rs + x +
//   dx]
// Slots of rows outside [dy_lo, dy_hi] are not written; slots whose x + dx falls in the padding
// hold a value computed from the padding, for the caller to mask.
void local_scores_row(const float* q, std::int64_t q_cs, const float* k, std::int64_t k_cs,
                      std::int64_t k_rs, std::int64_t C, std::int64_t W, std::int64_t D,
                      std::int64_t dy_lo, std::int64_t dy_hi, float* scores);

// Local-window weighted sum of one pixel row: w is [(2D + 1)^2][W] (slot-major, as
// local_scores_row writes), v a row-padded value map like k above (channel 0, row y, x = 0;
// strides v_cs, v_rs), out channel 0 of the output row (x = 0, channel stride out_cs). For c <
// Cv and x < W:
//   out[c*out_cs + x] = sum_{dy in [dy_lo, dy_hi]} sum_dx w[slot*W + x] * v[c*v_cs + dy*v_rs + x +
//   dx]
// over the slots in order. Where x + dx falls in the padding, the weight must be finite and the
// padding zeros, so those terms add +0.
void local_sum_row(const float* w, const float* v, std::int64_t v_cs, std::int64_t v_rs,
                   std::int64_t Cv, std::int64_t W, std::int64_t D, std::int64_t dy_lo,
                   std::int64_t dy_hi, float* out, std::int64_t out_cs);

// out[i] = sum_e q[e] * k[idx[i] * E + e] for i < count (rows of k gathered by idx).
void gathered_dots(const float* q, const float* k, std::int64_t E, const std::int32_t* idx,
                   std::int64_t count, float* out);

// out[c] = sum_i w[i] * v[idx[i] * Ev + c] for c < Ev, over i < count in order.
void gathered_weighted_sum(const float* w, const float* v, std::int64_t Ev, const std::int32_t* idx,
                           std::int64_t count, float* out);

// The scans of select_keys' exact top-k (sparse_attention.cpp), element by element in order
// with exact comparisons, so every target gives the same results:
// vals[j] = s[j] for j < n, NaN as -inf.
void nan_as_lowest(const float* s, std::int64_t n, float* vals);

// The values of vals[0..n) that are >= bound, in order, into out (room for n floats); returns
// how many.
std::int64_t values_at_least(const float* vals, std::int64_t n, float bound, float* out);

// The indices j < n, in increasing order, with vals[j] > thr (above) or vals[j] == thr (not
// above), the first `limit` of them into out; returns how many were written.
std::int64_t indices_where(const float* vals, std::int64_t n, float thr, bool above,
                           std::int32_t* out, std::int64_t limit);

}  // namespace cvattn::detail
