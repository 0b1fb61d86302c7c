// Per-target bodies of the polyphase split of dilated convs (conv_dilated.cpp), compiled once for
// every Highway target (Highway's toggle instead of a plain include guard).
#if defined(CVATTN_FUNCTIONAL_CONV_DILATED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_CONV_DILATED_INL_H_
#undef CVATTN_FUNCTIONAL_CONV_DILATED_INL_H_
#else
#define CVATTN_FUNCTIONAL_CONV_DILATED_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "functional/detail/conv_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Groups [r, full) of one row as far as whole vectors of tag D reach: dst[b][r] = src[r*d + b]
// for b < d, vectors for d = 2..4 (what keep_3x3 gives for SK's kernels 5, 7, 9). Returns the
// first group left.
template <class D>
HWY_INLINE std::int64_t DeinterleaveGroups(D df, const float* HWY_RESTRICT src, float* const* dst,
                                           std::int64_t d, std::int64_t r, std::int64_t full) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  hn::Vec<D> v0, v1, v2, v3;
  if (d == 2) {
    for (; r + lanes <= full; r += lanes) {
      hn::LoadInterleaved2(df, src + r * 2, v0, v1);
      hn::StoreU(v0, df, dst[0] + r);
      hn::StoreU(v1, df, dst[1] + r);
    }
  } else if (d == 3) {
    for (; r + lanes <= full; r += lanes) {
      hn::LoadInterleaved3(df, src + r * 3, v0, v1, v2);
      hn::StoreU(v0, df, dst[0] + r);
      hn::StoreU(v1, df, dst[1] + r);
      hn::StoreU(v2, df, dst[2] + r);
    }
  } else if (d == 4) {
    for (; r + lanes <= full; r += lanes) {
      hn::LoadInterleaved4(df, src + r * 4, v0, v1, v2, v3);
      hn::StoreU(v0, df, dst[0] + r);
      hn::StoreU(v1, df, dst[1] + r);
      hn::StoreU(v2, df, dst[2] + r);
      hn::StoreU(v3, df, dst[3] + r);
    }
  }
  return r;
}

// The inverse: dst[r*d + b] = src[b][r].
template <class D>
HWY_INLINE std::int64_t InterleaveGroups(D df, const float* const* src, float* HWY_RESTRICT dst,
                                         std::int64_t d, std::int64_t r, std::int64_t full) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  if (d == 2) {
    for (; r + lanes <= full; r += lanes) {
      hn::StoreInterleaved2(hn::LoadU(df, src[0] + r), hn::LoadU(df, src[1] + r), df, dst + r * 2);
    }
  } else if (d == 3) {
    for (; r + lanes <= full; r += lanes) {
      hn::StoreInterleaved3(hn::LoadU(df, src[0] + r), hn::LoadU(df, src[1] + r),
                            hn::LoadU(df, src[2] + r), df, dst + r * 3);
    }
  } else if (d == 4) {
    for (; r + lanes <= full; r += lanes) {
      hn::StoreInterleaved4(hn::LoadU(df, src[0] + r), hn::LoadU(df, src[1] + r),
                            hn::LoadU(df, src[2] + r), hn::LoadU(df, src[3] + r), df, dst + r * 4);
    }
  }
  return r;
}

// dst[b][r] = src[r*d + b] for b < d and r < full: whole vectors, then 8 and 4 lanes, then one
// at a time. A 56-wide row at d = 2 is 28 groups, 16 + 8 + 4 on AVX-512, where a scalar tail of
// 12 used to cost more than the vectors. Also the stride-2 depthwise kernels' phase split.
HWY_INLINE void DeinterleaveRow(const float* HWY_RESTRICT src, float* const* dst, std::int64_t d,
                                std::int64_t full) {
  std::int64_t r = DeinterleaveGroups(hn::ScalableTag<float>(), src, dst, d, 0, full);
  r = DeinterleaveGroups(hn::CappedTag<float, 8>(), src, dst, d, r, full);
  r = DeinterleaveGroups(hn::CappedTag<float, 4>(), src, dst, d, r, full);
  for (; r < full; ++r) {
    for (std::int64_t b = 0; b < d; ++b) dst[b][r] = src[r * d + b];
  }
}

// deinterleave_rows (functional/detail/conv_kernels.hpp).
inline void DeinterleaveRows(const float* HWY_RESTRICT src, std::int64_t src_ld, std::int64_t rows,
                             std::int64_t w, std::int64_t d, float* const* dst,
                             std::int64_t dst_ld) {
  const std::int64_t full = w / d, wm = (w + d - 1) / d;
  float* out[kMaxPolyphase];
  for (std::int64_t q = 0; q < rows; ++q) {
    const float* in = src + q * src_ld;
    for (std::int64_t b = 0; b < d; ++b) out[b] = dst[b] + q * dst_ld;
    DeinterleaveRow(in, out, d, full);
    if (full < wm) {  // the ragged last group, then the zero extension
      for (std::int64_t b = 0; b < d; ++b)
        out[b][full] = full * d + b < w ? in[full * d + b] : 0.0f;
    }
  }
}

// interleave_rows (functional/detail/conv_kernels.hpp).
inline void InterleaveRows(const float* const* src, std::int64_t src_ld, std::int64_t rows,
                           std::int64_t w, std::int64_t d, float* HWY_RESTRICT dst,
                           std::int64_t dst_ld) {
  const std::int64_t full = w / d;
  const float* in[kMaxPolyphase];
  for (std::int64_t q = 0; q < rows; ++q) {
    float* out = dst + q * dst_ld;
    for (std::int64_t b = 0; b < d; ++b) in[b] = src[b] + q * src_ld;
    std::int64_t r = InterleaveGroups(hn::ScalableTag<float>(), in, out, d, 0, full);
    r = InterleaveGroups(hn::CappedTag<float, 8>(), in, out, d, r, full);
    r = InterleaveGroups(hn::CappedTag<float, 4>(), in, out, d, r, full);
    for (; r < full; ++r) {
      for (std::int64_t b = 0; b < d; ++b) out[r * d + b] = in[b][r];
    }
    for (std::int64_t b = 0; full * d + b < w; ++b) out[full * d + b] = in[b][full];
  }
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
