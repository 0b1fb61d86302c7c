// Runtime dispatch of the channel-attention kernels (channel_kernels.hpp); the SIMD bodies are in
// channel_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/channel_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/channel_kernels-inl.h"

#if HWY_ONCE
#include <hwy/cache_control.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/cache_sizes.hpp"
#include "core/dispatch.hpp"
#include "functional/detail/channel_kernels.hpp"

namespace cvattn::detail {

std::int64_t streaming_store_bytes() {
  static const std::int64_t bytes = [] {
    const std::int64_t llc = cache_bytes(3);
    return llc > 0 ? llc : std::int64_t{32} << 20;
  }();
  return bytes;
}

HWY_EXPORT(ScalePlane);
HWY_EXPORT(ScalePlane2);
HWY_EXPORT(ChannelMeanMaxScaled);
HWY_EXPORT(AffinePlane);
HWY_EXPORT(PoolPlanes);
HWY_EXPORT(ScalePlanes);
HWY_EXPORT(DotRows);
HWY_EXPORT(SpatialConv);

void affine_plane(const float* x, float* y, float a, float b, const float* r, std::int64_t n) {
  CVATTN_DISPATCH(AffinePlane)(x, y, a, b, r, n);
}

void scale_plane(const float* x, float* y, float g, std::int64_t n, bool stream) {
  CVATTN_DISPATCH(ScalePlane)(x, y, g, n, stream);
}

void scale_plane2(const float* x, float* y, float g, const float* s, std::int64_t n, bool stream) {
  CVATTN_DISPATCH(ScalePlane2)(x, y, g, s, n, stream);
}

void pool_planes(const float* x, std::int64_t count, std::int64_t hw, bool add_max, float* out) {
  CVATTN_DISPATCH(PoolPlanes)(x, count, hw, add_max, out);
}

void scale_planes(const float* x, float* y, const float* g, std::int64_t count, std::int64_t hw,
                  bool stream) {
  CVATTN_DISPATCH(ScalePlanes)(x, y, g, count, hw, stream);
}

void dot_rows(const float* w, std::int64_t rows, std::int64_t cols, const float* v,
              const float* bias, float* out) {
  CVATTN_DISPATCH(DotRows)(w, rows, cols, v, bias, out);
}

void store_fence() { hwy::FlushStream(); }

void channel_mean_max_scaled(const float* x, const float* g, std::int64_t channels, std::int64_t hw,
                             std::int64_t p0, std::int64_t p1, float* mean, float* max) {
  CVATTN_DISPATCH(ChannelMeanMaxScaled)(x, g, channels, hw, p0, p1, mean, max);
}

void spatial_conv(const float* padded, const float* weight, std::int64_t k, std::int64_t h,
                  std::int64_t w, std::int64_t row0, std::int64_t row1, float* out) {
  CVATTN_DISPATCH(SpatialConv)(padded, weight, k, h, w, row0, row1, out);
}

void apply_gate(GateLayer gate, float* u, std::int64_t n) {
  if (gate == GateLayer::sigmoid) {
    for (std::int64_t i = 0; i < n; ++i) u[i] = 1.0f / (1.0f + std::exp(-u[i]));
  } else if (gate == GateLayer::tanh) {
    for (std::int64_t i = 0; i < n; ++i) u[i] = std::tanh(u[i]);
  } else {
    // std::max/min keep a NaN first argument, so NaN propagates like torch's Hardsigmoid.
    for (std::int64_t i = 0; i < n; ++i) {
      u[i] = std::min(std::max(u[i] + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
  }
}

void pad_planes(const float* in, std::int64_t k, std::int64_t h, std::int64_t w, float* padded) {
  const std::int64_t pad = (k - 1) / 2;
  const std::int64_t hp = h + 2 * pad, wp = w + 2 * pad;
  std::fill(padded, padded + 2 * hp * wp, 0.0f);
  for (std::int64_t ci = 0; ci < 2; ++ci) {
    for (std::int64_t y = 0; y < h; ++y) {
      std::copy(in + (ci * h + y) * w, in + (ci * h + y + 1) * w,
                padded + (ci * hp + y + pad) * wp + pad);
    }
  }
}

}  // namespace cvattn::detail
#endif  // HWY_ONCE
