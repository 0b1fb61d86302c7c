#pragma once
// Mean and biased variance of a contiguous run of floats, for the normalisation kernels.
// Private to cvattn.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cvattn::functional::detail {

struct Moments {
  float mean = 0.0f;
  float rstd = 0.0f;  // 1 / sqrt(var + eps)
};

// Sum of n floats: 16 float lanes (which the compiler vectorises) over blocks of at most 1024
// elements, each block's lanes added in double, so that long groups (GroupNorm's C/G * H * W)
// keep float-rounding error from growing with n.
template <class F>
double lane_sum(const float* x, std::int64_t n, F&& f) {
  constexpr std::int64_t kLanes = 16;
  constexpr std::int64_t kBlock = 1024;
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

// Two passes: the mean, then the sum of squares about it, so that a large common offset does
// not cancel the variance away (rounding the mean to float adds only its squared rounding
// error to the variance). NaN or inf anywhere gives a NaN rstd. n > 0.
inline Moments moments(const float* x, std::int64_t n, double eps) {
  const double count = static_cast<double>(n);
  const float m = static_cast<float>(lane_sum(x, n, [](float v) { return v; }) / count);
  const double ss = lane_sum(x, n, [m](float v) { return (v - m) * (v - m); });
  const double var = std::max(ss / count, 0.0);  // keeps NaN (NaN < 0 is false)
  Moments r;
  r.mean = m;
  r.rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
  return r;
}

}  // namespace cvattn::functional::detail
