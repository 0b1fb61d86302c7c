#pragma once
// Reference twins of the row (de)interleaving of conv2d's polyphase path
// (functional/detail/conv_kernels.hpp): plain loops, the oracles of the parity test.
#include <cstdint>

namespace cvattn::reference {

inline void deinterleave_row(const float* src, float* const* dst, std::int64_t d,
                             std::int64_t full) {
  for (std::int64_t r = 0; r < full; ++r) {
    for (std::int64_t b = 0; b < d; ++b) dst[b][r] = src[r * d + b];
  }
}

inline void interleave_row(const float* const* src, float* dst, std::int64_t d, std::int64_t full) {
  for (std::int64_t r = 0; r < full; ++r) {
    for (std::int64_t b = 0; b < d; ++b) dst[r * d + b] = src[b][r];
  }
}

}  // namespace cvattn::reference
