// Per-target bodies of functional/detail/transpose.hpp, compiled once for every Highway target by
// transpose.cpp and, for the key packing, by sdpa_kernel.cpp (the toggle below is Highway's
// convention for such files). The register blocks are 8x8 in 256-bit vectors where the target has
// them (AVX2, AVX-512) and 4x4 in 128-bit ones otherwise (SSE4, NEON, EMU128): both the reads
// and the writes stay sequential within a block.
#if defined(CVATTN_FUNCTIONAL_DETAIL_TRANSPOSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_TRANSPOSE_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_TRANSPOSE_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_TRANSPOSE_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The tag of the transpose blocks: up to 8 float lanes.
using TransposeTag = hn::CappedTag<float, 8>;

// Side of the square register block (8, or 4 without 256-bit vectors; 1 on HWY_SCALAR).
HWY_INLINE constexpr std::int64_t TransposeBlockSize() {
  return static_cast<std::int64_t>(hn::MaxLanes(TransposeTag()));
}

#if HWY_TARGET != HWY_SCALAR
// The B x B tile held in r[0..B) (row i in r[i]), transposed: column t stored to
// dst[t*dst_stride .. +B). The rows may come from memory (TransposeBlock) or from registers (the
// channel-group tiles of grid_sample).
HWY_INLINE void TransposeTileStore(hn::VFromD<TransposeTag>* r, float* HWY_RESTRICT dst,
                                   std::int64_t dst_stride) {
  constexpr std::int64_t B = TransposeBlockSize();
  const TransposeTag d;
  using V = hn::VFromD<decltype(d)>;
  const hn::Repartition<std::uint64_t, decltype(d)> d64;
  // Within each 128-bit block: pairs of rows interleaved by 32 bits, then by 64 bits, which
  // transposes each 4x4 sub-block.
  V t[B];
  for (std::int64_t i = 0; i < B / 2; ++i) {
    t[2 * i] = hn::InterleaveLower(d, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = hn::InterleaveUpper(d, r[2 * i], r[2 * i + 1]);
  }
  V u[B];
  for (std::int64_t i = 0; i < B / 4; ++i) {
    for (std::int64_t k = 0; k < 2; ++k) {
      const auto a = hn::BitCast(d64, t[4 * i + k]), b = hn::BitCast(d64, t[4 * i + k + 2]);
      u[4 * i + 2 * k] = hn::BitCast(d, hn::InterleaveLower(d64, a, b));
      u[4 * i + 2 * k + 1] = hn::BitCast(d, hn::InterleaveUpper(d64, a, b));
    }
  }
  if constexpr (B == 4) {
    for (std::int64_t i = 0; i < 4; ++i) hn::StoreU(u[i], d, dst + i * dst_stride);
  } else {
    // 8 lanes: swap the off-diagonal 4x4 sub-blocks between the 128-bit halves.
    for (std::int64_t i = 0; i < 4; ++i) {
      hn::StoreU(hn::ConcatLowerLower(d, u[i + 4], u[i]), d, dst + i * dst_stride);
      hn::StoreU(hn::ConcatUpperUpper(d, u[i + 4], u[i]), d, dst + (i + 4) * dst_stride);
    }
  }
}
#endif

// B x B transpose (B = TransposeBlockSize()) of rows src[i*stride .. +B) into
// dst[t*dst_stride + i].
HWY_INLINE void TransposeBlock(const float* HWY_RESTRICT src, std::int64_t stride,
                               float* HWY_RESTRICT dst, std::int64_t dst_stride) {
  constexpr std::int64_t B = TransposeBlockSize();
#if HWY_TARGET == HWY_SCALAR  // one lane: no shuffles
  for (std::int64_t i = 0; i < B; ++i) {
    for (std::int64_t t = 0; t < B; ++t) dst[t * dst_stride + i] = src[i * stride + t];
  }
#else
  const TransposeTag d;
  hn::VFromD<decltype(d)> r[B];
  for (std::int64_t i = 0; i < B; ++i) r[i] = hn::LoadU(d, src + i * stride);
  TransposeTileStore(r, dst, dst_stride);
#endif
}

// transpose() in transpose.hpp.
inline void Transpose(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::int64_t rows,
                      std::int64_t cols) {
  constexpr std::int64_t B = TransposeBlockSize();
  std::int64_t r0 = 0;
  for (; r0 + B <= rows; r0 += B) {
    std::int64_t c0 = 0;
    for (; c0 + B <= cols; c0 += B) {
      TransposeBlock(src + r0 * cols + c0, cols, dst + c0 * rows + r0, rows);
    }
    for (; c0 < cols; ++c0) {
      for (std::int64_t r = r0; r < r0 + B; ++r) dst[c0 * rows + r] = src[r * cols + c0];
    }
  }
  for (; r0 < rows; ++r0) {
    for (std::int64_t c = 0; c < cols; ++c) dst[c * rows + r0] = src[r0 * cols + c];
  }
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
