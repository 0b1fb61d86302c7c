#pragma once
// Matrix transposes for the attention kernels (token <-> channel layouts, key packing).
// Private to cvattn.
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace cvattn::detail {

#if defined(__AVX2__) && defined(__FMA__)
// 8x8 transpose of rows src[i*stride .. +8) into dst[t*dst_stride + i].
inline void transpose8x8(const float* src, std::int64_t stride, float* dst,
                         std::int64_t dst_stride) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * stride);
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}

#endif

// dst [cols, rows] (row stride rows) = src [rows, cols]^T, in 8x8 register blocks where
// available, so both the reads and the writes stay sequential within a block.
inline void transpose(const float* src, float* dst, std::int64_t rows, std::int64_t cols) {
  std::int64_t r0 = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; r0 + 8 <= rows; r0 += 8) {
    std::int64_t c0 = 0;
    for (; c0 + 8 <= cols; c0 += 8) transpose8x8(src + r0 * cols + c0, cols, dst + c0 * rows + r0, rows);
    for (; c0 < cols; ++c0) {
      for (std::int64_t r = r0; r < r0 + 8; ++r) dst[c0 * rows + r] = src[r * cols + c0];
    }
  }
#endif
  for (; r0 < rows; ++r0) {
    for (std::int64_t c = 0; c < cols; ++c) dst[c * rows + r0] = src[r0 * cols + c];
  }
}

}  // namespace cvattn::detail
