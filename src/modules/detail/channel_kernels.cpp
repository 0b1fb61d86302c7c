#include "modules/detail/channel_kernels.hpp"

#include <cmath>
#include <limits>

namespace cvattn::detail {
namespace {

// 32 float lanes = four AVX registers of independent accumulators, enough to hide the add
// latency; GCC vectorises the fixed-size lane loops without -ffast-math.
constexpr int kLanes = 32;
// Elements summed in float before folding into the double total: bounds the float error.
constexpr std::int64_t kBlock = 2048;

}  // namespace

float plane_mean(const float* p, std::int64_t n) {
  double total = 0.0;
  std::int64_t i = 0;
  const std::int64_t vec_end = n - n % kLanes;
  while (i < vec_end) {
    const std::int64_t block_end = std::min(vec_end, i + kBlock);
    float s[kLanes] = {};
    for (; i < block_end; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) s[j] += p[i + j];
    }
    for (int j = 0; j < kLanes; ++j) total += s[j];
  }
  for (; i < n; ++i) total += p[i];
  return static_cast<float>(total / static_cast<double>(n));
}

PlaneStats plane_mean_max(const float* p, std::int64_t n) {
  double total = 0.0;
  float m[kLanes];
  for (float& v : m) v = -std::numeric_limits<float>::infinity();
  std::int64_t i = 0;
  const std::int64_t vec_end = n - n % kLanes;
  while (i < vec_end) {
    const std::int64_t block_end = std::min(vec_end, i + kBlock);
    float s[kLanes] = {};
    for (; i < block_end; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        const float v = p[i + j];
        s[j] += v;
        m[j] = max_nan(m[j], v);
      }
    }
    for (int j = 0; j < kLanes; ++j) total += s[j];
  }
  float mx = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) {
    total += p[i];
    mx = max_nan(mx, p[i]);
  }
  for (int j = 0; j < kLanes; ++j) mx = max_nan(mx, m[j]);
  return {static_cast<float>(total / static_cast<double>(n)), mx};
}

void scale_plane(const float* __restrict x, float* __restrict y, float g, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * g;
}

void multiply_inplace(float* __restrict y, const float* __restrict s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] *= s[i];
}

void scale_channels_reduce(const float* __restrict x, float* __restrict y,
                           const float* __restrict g, std::int64_t channels, std::int64_t hw,
                           std::int64_t p0, std::int64_t p1, float* __restrict sum,
                           float* __restrict max) {
  const std::int64_t len = p1 - p0;
  {
    const float g0 = g[0];
    const float* xr = x + p0;
    float* yr = y + p0;
    for (std::int64_t p = 0; p < len; ++p) {
      const float v = xr[p] * g0;
      yr[p] = v;
      sum[p] = v;
      max[p] = v;
    }
  }
  for (std::int64_t c = 1; c < channels; ++c) {
    const float gc = g[c];
    const float* xr = x + c * hw + p0;
    float* yr = y + c * hw + p0;
    for (std::int64_t p = 0; p < len; ++p) {
      const float v = xr[p] * gc;
      yr[p] = v;
      sum[p] += v;
      max[p] = max_nan(max[p], v);
    }
  }
}

void apply_gate(GateLayer gate, float* u, std::int64_t n) {
  if (gate == GateLayer::sigmoid) {
    for (std::int64_t i = 0; i < n; ++i) u[i] = 1.0f / (1.0f + std::exp(-u[i]));
  } else {
    // std::max/min keep a NaN first argument, so NaN propagates like torch's Hardsigmoid.
    for (std::int64_t i = 0; i < n; ++i) {
      u[i] = std::min(std::max(u[i] + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
  }
}

double dot(const float* a, const float* b, std::int64_t n) {
  double s = 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

void spatial_conv(const float* in, const float* weight, std::int64_t k, std::int64_t h,
                  std::int64_t w, std::int64_t row0, std::int64_t row1, float* out) {
  const std::int64_t pad = (k - 1) / 2;
  for (std::int64_t oy = row0; oy < row1; ++oy) {
    float* __restrict orow = out + oy * w;
    for (std::int64_t ox = 0; ox < w; ++ox) orow[ox] = 0.0f;
    for (std::int64_t ci = 0; ci < 2; ++ci) {
      for (std::int64_t ky = 0; ky < k; ++ky) {
        const std::int64_t iy = oy + ky - pad;
        if (iy < 0 || iy >= h) continue;
        const float* __restrict irow = in + (ci * h + iy) * w;
        const float* wrow = weight + (ci * k + ky) * k;
        for (std::int64_t kx = 0; kx < k; ++kx) {
          // Output columns whose tap ox + kx - pad lies inside [0, w).
          const std::int64_t lo = std::max<std::int64_t>(0, pad - kx);
          const std::int64_t hi = std::min<std::int64_t>(w, w + pad - kx);
          const float wk = wrow[kx];
          const std::int64_t shift = kx - pad;
          for (std::int64_t ox = lo; ox < hi; ++ox) orow[ox] += wk * irow[ox + shift];
        }
      }
    }
  }
}

}  // namespace cvattn::detail
