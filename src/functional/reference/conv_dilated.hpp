#pragma once
// Reference twins of the row (de)interleaving of conv2d's polyphase path
// (functional/detail/conv_kernels.hpp): plain loops, the oracles of the parity test.
#include <cstdint>

namespace cvattn::reference {

inline void deinterleave_rows(const float* src, std::int64_t src_ld, std::int64_t rows,
                              std::int64_t w, std::int64_t d, float* const* dst,
                              std::int64_t dst_ld) {
  const std::int64_t wm = (w + d - 1) / d;
  for (std::int64_t q = 0; q < rows; ++q) {
    for (std::int64_t r = 0; r < wm; ++r) {
      for (std::int64_t b = 0; b < d; ++b) {
        dst[b][q * dst_ld + r] = r * d + b < w ? src[q * src_ld + r * d + b] : 0.0f;
      }
    }
  }
}

inline void interleave_rows(const float* const* src, std::int64_t src_ld, std::int64_t rows,
                            std::int64_t w, std::int64_t d, float* dst, std::int64_t dst_ld) {
  for (std::int64_t q = 0; q < rows; ++q) {
    for (std::int64_t x = 0; x < w; ++x) dst[q * dst_ld + x] = src[x % d][q * src_ld + x / d];
  }
}

}  // namespace cvattn::reference
