#pragma once
// Reference twin of deform_conv2d (functional/deform_conv-inl.h): torchvision's definition output
// element by output element, bilinear samples with its range rule, sums in double. The oracle of
// the per-target parity test; no im2col, no packing, no SIMD.
#include <cmath>
#include <cstdint>

#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/deform_conv.hpp"

namespace cvattn::reference {

namespace deform_detail {

// torchvision's bilinear_interpolate: 0 for y <= -1, y >= h, x <= -1 or x >= w (and NaN);
// corners outside the plane read 0.
inline double bilinear(const float* plane, std::int64_t h, std::int64_t w, float y, float x) {
  if (!(y > -1.0f && y < static_cast<float>(h) && x > -1.0f && x < static_cast<float>(w))) {
    return 0.0;
  }
  const float y0 = std::floor(y), x0 = std::floor(x);
  const float ly = y - y0, lx = x - x0;
  const auto yi = static_cast<std::int64_t>(y0), xi = static_cast<std::int64_t>(x0);
  auto at = [&](std::int64_t yy, std::int64_t xx) -> double {
    return (yy >= 0 && yy < h && xx >= 0 && xx < w) ? plane[yy * w + xx] : 0.0;
  };
  return (1.0 - ly) * (1.0 - lx) * at(yi, xi) + (1.0 - ly) * lx * at(yi, xi + 1) +
         ly * (1.0 - lx) * at(yi + 1, xi) + ly * lx * at(yi + 1, xi + 1);
}

}  // namespace deform_detail

// deform_conv2d for inputs the optimised version accepts (no validation here). mask may be
// undefined (v1), bias too.
inline Tensor deform_conv2d(const Tensor& input, const Tensor& offset, const Tensor& weight,
                            const Tensor& bias, const Tensor& mask,
                            const functional::DeformConv2dOptions& o) {
  const std::int64_t n = input.dim(0), cin = input.dim(1), h = input.dim(2), w = input.dim(3);
  const std::int64_t cout = weight.dim(0), cin_g = weight.dim(1), kh = weight.dim(2),
                     kw = weight.dim(3);
  const std::int64_t taps = kh * kw;
  const std::int64_t sh = o.stride().h, sw = o.stride().w, ph = o.padding().h, pw = o.padding().w;
  const std::int64_t dh = o.dilation().h, dw = o.dilation().w;
  const std::int64_t ho = (h + 2 * ph - (dh * (kh - 1) + 1)) / sh + 1;
  const std::int64_t wo = (w + 2 * pw - (dw * (kw - 1) + 1)) / sw + 1;
  const std::int64_t groups = cin / cin_g, cout_g = cout / groups;
  const std::int64_t offset_groups = offset.dim(1) / (2 * taps), cin_o = cin / offset_groups;
  const std::int64_t plane = ho * wo;
  Tensor out = Tensor::empty({n, cout, ho, wo});
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t oc = 0; oc < cout; ++oc) {
      const std::int64_t gi = oc / cout_g;
      for (std::int64_t oy = 0; oy < ho; ++oy) {
        for (std::int64_t ox = 0; ox < wo; ++ox) {
          const std::int64_t p = oy * wo + ox;
          double acc = bias.defined() ? bias[oc] : 0.0;
          for (std::int64_t c = 0; c < cin_g; ++c) {
            const std::int64_t ca = gi * cin_g + c;
            const std::int64_t grp = ca / cin_o;
            const float* src = input.data() + (b * cin + ca) * h * w;
            for (std::int64_t i = 0; i < kh; ++i) {
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t k = i * kw + j;
                const float* off =
                    offset.data() + ((b * offset_groups + grp) * 2 * taps + 2 * k) * plane;
                const float y = static_cast<float>(oy * sh - ph + i * dh) + off[p];
                const float x = static_cast<float>(ox * sw - pw + j * dw) + off[plane + p];
                double v = deform_detail::bilinear(src, h, w, y, x);
                if (mask.defined()) v *= mask[((b * offset_groups + grp) * taps + k) * plane + p];
                acc += static_cast<double>(weight[((oc * cin_g + c) * kh + i) * kw + j]) * v;
              }
            }
          }
          out[(b * cout + oc) * plane + p] = static_cast<float>(acc);
        }
      }
    }
  }
  return out;
}

}  // namespace cvattn::reference
