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

HWY_EXPORT(DeinterleaveRow);
HWY_EXPORT(InterleaveRow);

void deinterleave_row(const float* src, float* const* dst, std::int64_t d, std::int64_t full) {
  CVATTN_DISPATCH(DeinterleaveRow)(src, dst, d, full);
}

void interleave_row(const float* const* src, float* dst, std::int64_t d, std::int64_t full) {
  CVATTN_DISPATCH(InterleaveRow)(src, dst, d, full);
}

bool use_polyphase(const ConvGeometry& g) {
  if (g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || g.dh != g.dw || g.dh < 2 ||
      g.dh > kMaxPolyphase || g.ph != g.dh || g.pw != g.dw) {
    return false;
  }
  const std::int64_t hm = ceil_div(g.h, g.dh), wm = ceil_div(g.w, g.dw);
  return g.cin_g >= kWinogradMinChannels && g.cout_g >= kWinogradMinChannels &&
         ceil_div(hm, 2) * ceil_div(wm, 2) >= kWinogradMinTiles;
}

void conv_polyphase(const ConvGeometry& g, const Tensor& input, const Tensor& weight,
                    const Tensor& bias, float* y, ActLayer act) {
  const std::int64_t d = g.dh;
  const std::int64_t hm = ceil_div(g.h, d), wm = ceil_div(g.w, d);
  const std::int64_t full = g.w / d;  // column groups with all d phases inside the row
  const std::int64_t subs = d * d;
  const std::int64_t channels = g.cin;
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
    const float* plane = src + (n * channels + c) * g.h * g.w;
    float* rows[kMaxPolyphase];
    for (std::int64_t q = 0; q < hm; ++q) {
      for (std::int64_t b = 0; b < d; ++b) {
        rows[b] = xsd + ((((n * d + a) * d + b) * channels + c) * hm + q) * wm;
      }
      const std::int64_t iy = q * d + a;
      if (iy >= g.h) {  // the zero extension of a shorter phase
        for (std::int64_t b = 0; b < d; ++b) std::fill(rows[b], rows[b] + wm, 0.0f);
        continue;
      }
      const float* in = plane + iy * g.w;
      deinterleave_row(in, rows, d, full);
      for (std::int64_t b = 0; b < d; ++b) {  // ragged last group, then zero extension
        if (full < wm) rows[b][full] = full * d + b < g.w ? in[full * d + b] : 0.0f;
      }
    }
  });
  const std::int64_t cout = g.cout;
  const cvattn::detail::Workspace ys({g.n * subs, cout, hm, wm},
                                     "conv2d (dilated, polyphase output)");
  // act is elementwise, so applying it to the sub-images' outputs before interleaving them
  // gives the same values.
  conv2d_into(xs, weight, bias, Conv2dOptions().padding(1).groups(g.groups), ys.data(), {}, act);
  const float* ysd = ys.data();
  cvattn::detail::parallel_for(g.n * cout, [&](std::int64_t t) {
    const std::int64_t o = t % cout;
    const std::int64_t n = t / cout;
    float* out = y + t * g.h * g.w;
    const float* rows[kMaxPolyphase];
    for (std::int64_t i = 0; i < g.h; ++i) {
      const std::int64_t a = i % d, q = i / d;
      for (std::int64_t b = 0; b < d; ++b) {
        rows[b] = ysd + ((((n * d + a) * d + b) * cout + o) * hm + q) * wm;
      }
      float* row = out + i * g.w;
      interleave_row(rows, row, d, full);
      for (std::int64_t b = 0; full * d + b < g.w; ++b) row[full * d + b] = rows[b][full];
    }
  });
}

}  // namespace cvattn::functional::detail
#endif  // HWY_ONCE
