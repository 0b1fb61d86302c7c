#pragma once
// Reference twin of functional/detail/pointwise_kernels.hpp: the 1x1 convolution as one scalar
// loop per output (bias, then the products in order of input channel), then the reference
// activation; the oracle of the parity test run on every SIMD target.
#include <cstdint>

#include "cvattn/functional/activation.hpp"
#include "functional/reference/activation.hpp"

namespace cvattn::reference {

inline void pointwise_act(ActLayer act, const float* w, std::int64_t m, std::int64_t k,
                          const float* x, std::int64_t ldx, std::int64_t n, const float* bias,
                          float* out, std::int64_t ldo) {
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = bias ? bias[r] : 0.0f;
      for (std::int64_t c = 0; c < k; ++c) acc += w[r * k + c] * x[c * ldx + j];
      out[r * ldo + j] = activation(act, acc);
    }
  }
}

}  // namespace cvattn::reference
