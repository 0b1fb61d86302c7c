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

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[b][r] = src[r*d + b] for b < d and the `full` whole groups r; vectors for d = 2..4 (what
// keep_3x3 gives for SK's kernels 5, 7, 9).
inline void DeinterleaveRow(const float* HWY_RESTRICT src, float* const* dst, std::int64_t d,
                            std::int64_t full) {
  const hn::ScalableTag<float> df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t r = 0;
  hn::Vec<decltype(df)> v0, v1, v2, v3;
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
  for (; r < full; ++r) {
    for (std::int64_t b = 0; b < d; ++b) dst[b][r] = src[r * d + b];
  }
}

// The inverse: dst[r*d + b] = src[b][r] for r < full.
inline void InterleaveRow(const float* const* src, float* HWY_RESTRICT dst, std::int64_t d,
                          std::int64_t full) {
  const hn::ScalableTag<float> df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t r = 0;
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
  for (; r < full; ++r) {
    for (std::int64_t b = 0; b < d; ++b) dst[r * d + b] = src[b][r];
  }
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
