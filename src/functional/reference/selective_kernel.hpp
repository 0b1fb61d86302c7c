#pragma once
// Reference twin of functional/detail/selective_kernel.hpp (relu_path_sum): plain loops, a double
// sum, the oracle of the parity test run on every SIMD target.
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

}  // namespace cvattn::reference
