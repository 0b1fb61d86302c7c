#pragma once
// Reference twins of functional/detail/softmax.hpp: the definitions in plain loops with libm's
// exp2 and tanh, the oracles of the parity test run on every SIMD target.
#include <cmath>
#include <cstdint>
#include <limits>

#include "functional/detail/softmax.hpp"

namespace cvattn::reference {

// detail::softmax2_numerator: x[j] <- 2^(y_j - max y), y_j = x[j] + mask*log2 e, for j <
// allowed, 0 past it; returns 1/sum (0 for a fully masked row, which becomes zeros; NaN rows
// become NaN).
inline float softmax2_numerator(float* x, std::int64_t n, const float* mask, std::int64_t mask_step,
                                std::int64_t allowed) {
  const std::int64_t a = allowed < n ? allowed : n;
  const auto y = [&](std::int64_t j) {
    return x[j] + (mask != nullptr ? mask[j * mask_step] * detail::kLog2e : 0.0f);
  };
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (std::int64_t j = 0; j < a; ++j) {
    m = y(j) > m ? y(j) : m;
    nan = nan || std::isnan(y(j));
  }
  if (nan || m == -std::numeric_limits<float>::infinity()) {
    const float fill = nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    for (std::int64_t j = 0; j < n; ++j) x[j] = j < a ? fill : 0.0f;
    return fill;
  }
  double s = 0.0;
  for (std::int64_t j = 0; j < a; ++j) {
    x[j] = static_cast<float>(std::exp2(static_cast<double>(y(j)) - m));
    s += x[j];
  }
  for (std::int64_t j = a; j < n; ++j) x[j] = 0.0f;
  return static_cast<float>(1.0 / s);
}

inline float additive_score(const float* x, const float* y, const float* v, std::int64_t n) {
  double s = 0.0;
  for (std::int64_t a = 0; a < n; ++a) s += v[a] * std::tanh(static_cast<double>(x[a]) + y[a]);
  return static_cast<float>(s);
}

inline float row_max(const float* x, std::int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (std::int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// detail::scale_into: dst[j] = x[j] * a, one rounding (dst may be x).
inline void scale_into(const float* x, std::int64_t n, float a, float* dst) {
  for (std::int64_t j = 0; j < n; ++j) dst[j] = x[j] * a;
}

// detail::scale_add_into: dst[j] += x[j] * a, here rounded once (std::fma), whatever the build's
// contraction; a target without a fused multiply-add rounds the product as well.
inline void scale_add_into(const float* x, std::int64_t n, float a, float* dst) {
  for (std::int64_t j = 0; j < n; ++j) dst[j] = std::fma(x[j], a, dst[j]);
}

// detail::softmax_row: softmax of x*scale + mask over j < allowed, 0 past it.
inline void softmax_row(float* x, std::int64_t n, float scale, const float* mask,
                        std::int64_t mask_step, std::int64_t allowed) {
  const std::int64_t a = allowed < n ? allowed : n;
  for (std::int64_t j = 0; j < a; ++j) x[j] *= scale * detail::kLog2e;
  const float inv = softmax2_numerator(x, n, mask, mask_step, a);
  if (inv != 0.0f) {
    for (std::int64_t j = 0; j < a; ++j) x[j] *= inv;
  }
}

}  // namespace cvattn::reference
