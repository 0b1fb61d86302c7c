#pragma once
// The 1x1 convolution of few input channels as one runtime-dispatched Highway kernel that writes
// each output once: bias, products and activation in registers (bodies in
// pointwise_kernels-inl.h, reference twin in functional/reference/pointwise_kernels.hpp).
// With few input channels a GEMM library spends more on the passes around its product (the bias
// fill, its read-modify-write of the output, the activation pass) than on the product, and the
// outputs of the expansion convolutions of mobile networks do not fit in the cache.
#include <cstdint>

#include "cvattn/functional/activation.hpp"

namespace cvattn::functional::detail {

// The most input channels pointwise_act takes (its tail panel is on the stack).
inline constexpr std::int64_t kPointwiseMaxK = 160;

// Input channels up to which conv2d's 1x1 path prefers pointwise_act to the GEMM on the SIMD
// target in use (measured, docs/performance.md#pointwise-convolution); <= kPointwiseMaxK.
std::int64_t pointwise_preferred_max_k();

// out[r * ldo + j] = act(bias[r] + sum_c w[r * k + c] * x[c * ldx + j]) for r < m, j < n, the
// sum taken in order of c (bias 0 without one). k <= kPointwiseMaxK (ValueError otherwise);
// out must not overlap x or w.
void pointwise_act(ActLayer act, const float* w, std::int64_t m, std::int64_t k, const float* x,
                   std::int64_t ldx, std::int64_t n, const float* bias, float* out,
                   std::int64_t ldo);

}  // namespace cvattn::functional::detail
