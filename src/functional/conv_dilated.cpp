// conv2d's fast path for dilated 3x3 convs (conv_kernels.hpp: use_polyphase, conv_polyphase);
// the row (de)interleaving is dispatched at run time (conv_dilated-inl.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/conv_dilated-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/conv_dilated-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstdint>

#include "core/dispatch.hpp"
#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "functional/detail/conv_kernels.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(DeinterleaveRows);
HWY_EXPORT(InterleaveRows);

void deinterleave_rows(const float* src, std::int64_t src_ld, std::int64_t rows, std::int64_t w,
                       std::int64_t d, float* const* dst, std::int64_t dst_ld) {
  CVATTN_DISPATCH(DeinterleaveRows)(src, src_ld, rows, w, d, dst, dst_ld);
}

void interleave_rows(const float* const* src, std::int64_t src_ld, std::int64_t rows,
                     std::int64_t w, std::int64_t d, float* dst, std::int64_t dst_ld) {
  CVATTN_DISPATCH(InterleaveRows)(src, src_ld, rows, w, d, dst, dst_ld);
}

bool polyphase_kernel(const ConvGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == g.dw && g.dh >= 2 &&
         g.dh <= kMaxPolyphase && g.ph == g.dh && g.pw == g.dw && g.cin_g >= kWinogradMinChannels &&
         g.cout_g >= kWinogradMinChannels;
}

bool use_polyphase(const ConvGeometry& g) {
  if (!polyphase_kernel(g)) return false;
  const std::int64_t hm = ceil_div(g.h, g.dh), wm = ceil_div(g.w, g.dw);
  return ceil_div(hm, 2) * ceil_div(wm, 2) >= kWinogradMinTiles;
}

void conv_polyphase(const ConvGeometry& g, const Tensor& input, const Tensor& weight,
                    const Tensor& bias, float* y, const PreparedWeights& prepared, ActLayer act) {
  const std::int64_t d = g.dh;
  const std::int64_t hm = ceil_div(g.h, d), wm = ceil_div(g.w, d);
  const std::int64_t subs = d * d;
  const std::int64_t channels = g.cin;
  // Input rows a, a + d, ... of row phase a (none when a >= h).
  const auto phase_rows = [&](std::int64_t a) {
    return std::max<std::int64_t>(0, ceil_div(g.h - a, d));
  };
  // Scratch kept for the next call (core/workspace.hpp); conv2d only reads it.
  const cvattn::detail::Workspace xs_buffer({g.n * subs, channels, hm, wm},
                                            "conv2d (dilated, polyphase input)");
  const Tensor xs = xs_buffer.tensor({g.n * subs, channels, hm, wm});
  const float* src = input.data();
  float* xsd = xs_buffer.data();
  // One task per (sample, row phase a, channel): reads rows a, a+d, ... once, writes d planes.
  cvattn::detail::parallel_for(g.n * d * channels, [&](std::int64_t t) {
    const std::int64_t c = t % channels;
    const std::int64_t a = (t / channels) % d;
    const std::int64_t n = t / (channels * d);
    float* planes[kMaxPolyphase];
    for (std::int64_t b = 0; b < d; ++b) {
      planes[b] = xsd + (((n * d + a) * d + b) * channels + c) * hm * wm;
    }
    const std::int64_t rows = phase_rows(a);
    if (rows > 0) {  // (row a may lie past the plane: H < d)
      deinterleave_rows(src + ((n * channels + c) * g.h + a) * g.w, d * g.w, rows, g.w, d, planes,
                        wm);
    }
    for (std::int64_t b = 0; b < d; ++b) {  // the zero extension of a shorter phase
      std::fill(planes[b] + rows * wm, planes[b] + hm * wm, 0.0f);
    }
  });
  const std::int64_t cout = g.cout;
  const cvattn::detail::Workspace ys({g.n * subs, cout, hm, wm},
                                     "conv2d (dilated, polyphase output)");
  // act is elementwise, so applying it to the sub-images' outputs before interleaving them
  // gives the same values. The sub-images' convs are 3x3 of dilation 1 with the same weight:
  // the transforms Conv2dWeight prepared serve them.
  conv2d_into(xs, weight, bias, Conv2dOptions().padding(1).groups(g.groups), ys.data(), prepared,
              act);
  const float* ysd = ys.data();
  cvattn::detail::parallel_for(g.n * cout, [&](std::int64_t t) {
    const std::int64_t o = t % cout;
    const std::int64_t n = t / cout;
    float* out = y + t * g.h * g.w;
    for (std::int64_t a = 0; a < std::min(d, g.h); ++a) {  // output rows a, a + d, ...
      const float* planes[kMaxPolyphase];
      for (std::int64_t b = 0; b < d; ++b) {
        planes[b] = ysd + (((n * d + a) * d + b) * cout + o) * hm * wm;
      }
      interleave_rows(planes, wm, phase_rows(a), g.w, d, out + a * g.w, d * g.w);
    }
  });
}

}  // namespace cvattn::functional::detail
#endif  // HWY_ONCE
