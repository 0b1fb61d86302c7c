#pragma once
// Reference twin of functional/detail/selective_kernel.hpp (relu_path_sum, select_paths): plain
// loops, the oracle of the parity tests run on every SIMD target.
#include <cstdint>

namespace cvattn::reference {

inline double relu_path_sum(const float* const* f, std::int64_t offset, std::int64_t paths,
                            std::int64_t hw) {
  double total = 0.0;
  for (std::int64_t i = 0; i < hw; ++i) {
    for (std::int64_t p = 0; p < paths; ++p) {
      const float v = f[p][offset + i];
      total += v <= 0.0f ? 0.0 : static_cast<double>(v);  // NaN kept, as torch.relu
    }
  }
  return total;
}

// select_paths: every product rounded before the sum (std::fma nowhere, and a volatile product so
// that a compiler contracting multiply-adds cannot fuse it).
inline void select_paths(const float* const* f, std::int64_t offset, const float* w,
                         std::int64_t w_stride, std::int64_t paths, std::int64_t hw, float* y) {
  const auto relu = [](float v) { return v <= 0.0f ? 0.0f : v; };
  for (std::int64_t i = 0; i < hw; ++i) {
    float sum = 0.0f;
    for (std::int64_t p = 0; p < paths; ++p) {
      const volatile float product = w[p * w_stride] * relu(f[p][offset + i]);
      sum = p == 0 ? product : sum + product;
    }
    y[i] = sum;
  }
}

}  // namespace cvattn::reference
