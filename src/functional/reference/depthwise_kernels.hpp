#pragma once
// Reference twin of functional/detail/depthwise_kernels.hpp: the phase split by its definition
// (every phase float looked up in the padded plane) and the tap sum as one scalar loop, the
// oracles of the parity test run on every SIMD target.
#include <cstdint>

#include "functional/detail/depthwise_kernels.hpp"

namespace cvattn::reference {

inline void depthwise_split(const functional::detail::DepthwiseLayout& l, const float* src,
                            float* phases) {
  for (std::int64_t a = 0; a < l.sh; ++a) {
    for (std::int64_t b = 0; b < l.sw; ++b) {
      float* p = phases + (a * l.sw + b) * l.phase_size();
      for (std::int64_t r = 0; r < l.hq; ++r) {
        for (std::int64_t c = 0; c < l.wq; ++c) {
          const std::int64_t y = r * l.sh + a - l.ph, x = c * l.sw + b - l.pw;
          const bool inside = y >= 0 && y < l.h && x >= 0 && x < l.w;
          p[r * l.wq + c] = inside ? src[y * l.w + x] : 0.0f;
        }
      }
    }
  }
}

inline void depthwise_taps(const functional::detail::DepthwiseLayout& l,
                           const std::int64_t* offsets, std::int64_t taps, const float* k,
                           float bias, const float* scratch, float* out, std::int64_t oy0,
                           std::int64_t oy1) {
  for (std::int64_t oy = oy0; oy < oy1; ++oy) {
    for (std::int64_t ox = 0; ox < l.wo; ++ox) {
      float acc = bias;
      for (std::int64_t t = 0; t < taps; ++t) acc += k[t] * scratch[oy * l.wq + ox + offsets[t]];
      out[oy * l.wo + ox] = acc;
    }
  }
}

inline void gather_stride2(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[2 * i];
}

inline void im2col_stride2_rows(const float* src, std::int64_t src_step, float* dst,
                                std::int64_t dst_step, std::int64_t lo, std::int64_t hi,
                                std::int64_t wo, std::int64_t off, std::int64_t rows) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < wo; ++i) {
      dst[r * dst_step + i] = i >= lo && i < hi ? src[r * src_step + 2 * i + off] : 0.0f;
    }
  }
}

}  // namespace cvattn::reference
