#pragma once
// The elementwise activations of functional/activation.hpp as runtime-dispatched Highway kernels
// (bodies in activation_kernels-inl.h, reference twin in functional/reference/activation.hpp).
#include <cstdint>

#include "cvattn/functional/activation.hpp"

namespace cvattn::detail {

// y[i] = act(x[i]) for i < n; x and y may be the same array. identity copies.
void activation_kernel(ActLayer act, const float* x, float* y, std::int64_t n);

}  // namespace cvattn::detail
