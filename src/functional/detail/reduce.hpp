#pragma once
// Plane reductions shared by pooling and the channel gates: one definition, so every mean over a
// plane rounds the same way. Sums run in float SIMD lanes over blocks of kReduceBlock elements
// and in double across blocks, which bounds the float error for any plane size. Dispatched at
// run time to the best SIMD target (reduce-inl.h); the reference twin is
// functional/reference/reduce.hpp.
#include <cstdint>

namespace cvattn::detail {

inline constexpr std::int64_t kReduceBlock = 2048;

struct PlaneStats {
  float mean;
  float max;
};

// sum / n of n >= 1 contiguous floats (PyTorch's mean).
[[nodiscard]] float plane_mean(const float* p, std::int64_t n);
// Mean and NaN-propagating max (torch.amax) of n >= 1 contiguous floats, in one pass.
[[nodiscard]] PlaneStats plane_mean_max(const float* p, std::int64_t n);
// Index of the first largest of n >= 1 contiguous floats, NaN ranking below every number and
// -0 equal to +0 (0 when all are NaN): the hard normaliser's argmax (functional/score.hpp).
[[nodiscard]] std::int64_t first_max_index(const float* p, std::int64_t n);

}  // namespace cvattn::detail
