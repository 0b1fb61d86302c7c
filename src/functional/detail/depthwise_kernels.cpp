// Runtime dispatch of the depthwise tap kernels (depthwise_kernels.hpp); the bodies are in
// depthwise_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/depthwise_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/depthwise_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"
#include "cvattn/core/tensor.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(DepthwiseSplit);
HWY_EXPORT(DepthwiseTaps);
HWY_EXPORT(GatherStride2);
HWY_EXPORT(Im2colStride2Rows);

DepthwiseLayout depthwise_layout(const ConvGeometry& g) {
  DepthwiseLayout l{};
  l.h = g.h, l.w = g.w, l.ph = g.ph, l.pw = g.pw, l.sh = g.sh, l.sw = g.sw;
  l.ho = g.ho, l.wo = g.wo;
  // Each padded extent fits int64 (ConvGeometry's output size came from it).
  l.hq = ceil_div(g.h + 2 * g.ph, g.sh);
  l.wq = ceil_div(g.w + 2 * g.pw, g.sw);
  // The whole scratch of cin_g planes and the slack must be addressable.
  (void)checked_numel({g.cin_g, g.sh * g.sw, l.hq, l.wq}, "conv2d");
  return l;
}

std::vector<std::int64_t> depthwise_offsets(const ConvGeometry& g, const DepthwiseLayout& l) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(g.k()));
  std::size_t t = 0;
  for (std::int64_t c = 0; c < g.cin_g; ++c) {
    for (std::int64_t u = 0; u < g.kh; ++u) {
      const std::int64_t y = u * g.dh;
      for (std::int64_t v = 0; v < g.kw; ++v) {
        const std::int64_t x = v * g.dw;
        offsets[t++] = c * l.plane_floats() + ((y % g.sh) * g.sw + x % g.sw) * l.phase_size() +
                       (y / g.sh) * l.wq + x / g.sw;
      }
    }
  }
  return offsets;
}

void depthwise_split(const DepthwiseLayout& l, const float* src, float* phases) {
  CVATTN_DISPATCH(DepthwiseSplit)(l, src, phases);
}

void depthwise_taps(const DepthwiseLayout& l, const std::int64_t* offsets, std::int64_t taps,
                    const float* k, float bias, const float* scratch, float* out, std::int64_t oy0,
                    std::int64_t oy1) {
  CVATTN_DISPATCH(DepthwiseTaps)(l, offsets, taps, k, bias, scratch, out, oy0, oy1);
}

void gather_stride2(const float* src, float* dst, std::int64_t n) {
  CVATTN_DISPATCH(GatherStride2)(src, dst, n);
}

void im2col_stride2_rows(const float* src, std::int64_t src_step, float* dst, std::int64_t dst_step,
                         std::int64_t lo, std::int64_t hi, std::int64_t wo, std::int64_t off,
                         std::int64_t rows) {
  CVATTN_DISPATCH(Im2colStride2Rows)(src, src_step, dst, dst_step, lo, hi, wo, off, rows);
}

}  // namespace cvattn::functional::detail
#endif
