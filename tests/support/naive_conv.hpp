#pragma once
// conv2d by its definition, evaluated in double: the oracle for randomised shapes larger than
// the PyTorch fixtures (tests/functional/test_conv.cpp, test_simd_parity_depthwise.cpp).
#include <cstdint>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"

namespace cvattn::test {

// y = conv2d(x, w, b) with stride s, padding p, dilation d and `groups` groups.
inline Tensor naive_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, Pair2 s, Pair2 p,
                           Pair2 d, std::int64_t groups) {
  const auto [n, cin, h, wd] = x.nchw();
  const std::int64_t cout = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  const std::int64_t cin_g = cin / groups, cout_g = cout / groups;
  const std::int64_t ho = (h + 2 * p.h - d.h * (kh - 1) - 1) / s.h + 1;
  const std::int64_t wo = (wd + 2 * p.w - d.w * (kw - 1) - 1) / s.w + 1;
  Tensor y = Tensor::zeros({n, cout, ho, wo});
  for (std::int64_t ni = 0; ni < n; ++ni) {
    for (std::int64_t o = 0; o < cout; ++o) {
      const std::int64_t g = o / cout_g;
      for (std::int64_t oy = 0; oy < ho; ++oy) {
        for (std::int64_t ox = 0; ox < wo; ++ox) {
          double acc = b.defined() ? b[o] : 0.0;
          for (std::int64_t c = 0; c < cin_g; ++c) {
            for (std::int64_t u = 0; u < kh; ++u) {
              for (std::int64_t v = 0; v < kw; ++v) {
                const std::int64_t iy = oy * s.h - p.h + u * d.h;
                const std::int64_t ix = ox * s.w - p.w + v * d.w;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += static_cast<double>(w[((o * cin_g + c) * kh + u) * kw + v]) *
                       x.at(ni, g * cin_g + c, iy, ix);
              }
            }
          }
          y[((ni * cout + o) * ho + oy) * wo + ox] = static_cast<float>(acc);
        }
      }
    }
  }
  return y;
}

}  // namespace cvattn::test
