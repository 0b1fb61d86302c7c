#pragma once
// Reference twin of functional/detail/norm_kernels.hpp: the definition in plain loops, the oracle
// of the parity test run on every SIMD target.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "functional/detail/norm_kernels.hpp"

namespace cvattn::reference {

// The blocked 16-lane sum of norm_kernels.hpp, lane by lane.
template <class F>
double lane_sum(const float* x, std::int64_t n, F&& f) {
  constexpr std::int64_t kLanes = functional::detail::kMomentLanes;
  constexpr std::int64_t kBlock = functional::detail::kMomentBlock;
  double total = 0.0;
  std::int64_t i = 0;
  while (n - i >= kLanes) {
    const std::int64_t end = i + std::min(kBlock, (n - i) / kLanes * kLanes);
    float lanes[kLanes] = {};
    for (; i < end; i += kLanes) {
      for (std::int64_t l = 0; l < kLanes; ++l) lanes[l] += f(x[i + l]);
    }
    double block = 0.0;
    for (std::int64_t l = 0; l < kLanes; ++l) block += static_cast<double>(lanes[l]);
    total += block;
  }
  for (; i < n; ++i) total += static_cast<double>(f(x[i]));
  return total;
}

inline functional::detail::Moments moments(const float* x, std::int64_t n, double eps) {
  const double count = static_cast<double>(n);
  const float m = static_cast<float>(lane_sum(x, n, [](float v) { return v; }) / count);
  const double ss = lane_sum(x, n, [m](float v) { return (v - m) * (v - m); });
  const double var = std::max(ss / count, 0.0);
  functional::detail::Moments r;
  r.mean = m;
  r.rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
  return r;
}

inline void normalize_row(const float* in, float* out, std::int64_t n,
                          functional::detail::Moments m, const float* w, const float* b) {
  const float scale = m.rstd, shift = -m.mean * m.rstd;
  for (std::int64_t i = 0; i < n; ++i) {
    float v = in[i] * scale + shift;
    if (w != nullptr) v *= w[i];
    if (b != nullptr) v += b[i];
    out[i] = v;
  }
}

inline void layer_norm_rows(const float* in, float* out, std::int64_t rows, std::int64_t n,
                            const float* w, const float* b, double eps) {
  for (std::int64_t r = 0; r < rows; ++r) {
    reference::normalize_row(in + r * n, out + r * n, n, reference::moments(in + r * n, n, eps), w,
                             b);
  }
}

inline void layer_norm2d_tile(const float* in, float* out, std::int64_t c, std::int64_t hw,
                              std::int64_t len, const float* w, const float* b, double eps) {
  const double count = static_cast<double>(c);
  for (std::int64_t p = 0; p < len; ++p) {
    double sum = 0.0;
    for (std::int64_t ch = 0; ch < c; ++ch) sum += static_cast<double>(in[ch * hw + p]);
    const float mean = static_cast<float>(sum / count);
    double ss = 0.0;
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const float dv = in[ch * hw + p] - mean;
      ss += static_cast<double>(dv * dv);
    }
    const double var = std::max(ss / count, 0.0);
    const float scale = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float shift = -mean * scale;
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const float v = in[ch * hw + p] * scale + shift;
      out[ch * hw + p] = v * (w != nullptr ? w[ch] : 1.0f) + (b != nullptr ? b[ch] : 0.0f);
    }
  }
}

}  // namespace cvattn::reference
