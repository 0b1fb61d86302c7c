#pragma once
// Row primitives shared by the attention kernels: a numerically stable softmax of one row (a fast
// exp2), the additive (tanh) score, a row maximum and row scaling. Private to cvattn. Dispatched
// at run time to the best SIMD target (softmax-inl.h, where the exp2 and its accuracy are
// described; the SDPA tiles inline the same bodies); the reference twin is
// functional/reference/softmax.hpp.
#include <cstdint>

namespace cvattn::detail {

inline constexpr float kLog2e = 1.44269504088896341f;

// Softmax numerator of one row of scores already in log2 units (s * scale * log2 e):
// x[j] <- 2^(x[j] + mask[j*mask_step]*log2 e - max) for j < allowed, 0 for allowed <= j < n.
// Returns 1/sum, or 0 when every allowed entry is -inf (or allowed == 0); the row is then all
// zeros (PyTorch >= 2.5's "safe softmax"). mask (natural-log units, additive) may be null;
// mask_step is 0 (one value for the whole row) or 1. known_max, when given, is max_j x[j]
// over j < allowed (computed by the caller while producing x) and saves the max pass; it is
// only valid without a per-key mask.
[[nodiscard]] float softmax2_numerator(float* x, std::int64_t n, const float* mask,
                                       std::int64_t mask_step, std::int64_t allowed,
                                       const float* known_max = nullptr);

// softmax2_numerator for a row without mask whose maximum m is known (from the score tiles),
// up to a common factor of all entries (which 1/sum cancels): the hot path of attention.
// Keys more than ~126 below the maximum get ~1e-38 of its weight instead of exactly 0.
[[nodiscard]] float softmax2_numerator_unmasked(float* x, std::int64_t n, float m);

// sum_a v[a] * tanh(x[a] + y[a]) (Bahdanau's additive score), absolute error ~1e-7.
[[nodiscard]] float additive_score(const float* x, const float* y, const float* v, std::int64_t n);

// out[s] = additive_score(x, y + s * y_stride, v, n) for s < count (one dispatch for a row of
// keys: a dispatched call per score costs more than the score for small n).
void additive_scores(const float* x, const float* y, std::int64_t y_stride, const float* v,
                     std::int64_t n, std::int64_t count, float* out);

// Maximum of x[0..n) (-inf when n == 0); NaN entries may or may not be ignored.
[[nodiscard]] float row_max(const float* x, std::int64_t n);

// min over b < blocks of row_max(x + b * block, block) (+inf when blocks == 0).
[[nodiscard]] float min_of_block_maxima(const float* x, std::int64_t blocks, std::int64_t block);

inline void scale_row(float* x, std::int64_t n, float a) {
  for (std::int64_t j = 0; j < n; ++j) x[j] *= a;
}

// dst[0..n) = x[0..n) * a (dst may be x), in full vectors (GCC's tuning for some AMD cores
// would otherwise auto-vectorise this with 128-bit ones).
void scale_into(const float* x, std::int64_t n, float a, float* dst);

// dst[0..n) += x[0..n) * a.
void scale_add_into(const float* x, std::int64_t n, float a, float* dst);

inline void zero_row(float* x, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) x[j] = 0.0f;
}

// In-place softmax of x*scale + mask over x[0..n), entries j >= allowed masked out; for callers
// whose scores are not pre-scaled.
void softmax_row(float* x, std::int64_t n, float scale, const float* mask, std::int64_t mask_step,
                 std::int64_t allowed);

}  // namespace cvattn::detail
