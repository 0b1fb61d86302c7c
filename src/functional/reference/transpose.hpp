#pragma once
// Reference twin of functional/detail/transpose.hpp: the definition in plain loops, the oracle of
// the parity test run on every SIMD target.
#include <cstdint>

namespace cvattn::reference {

inline void transpose(const float* src, float* dst, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  }
}

}  // namespace cvattn::reference
