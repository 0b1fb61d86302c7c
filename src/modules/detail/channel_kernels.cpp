#include "modules/detail/channel_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <opencv2/core/hal/intrin.hpp>

#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#define CVATTN_HAS_SFENCE 1
#endif

// The reductions use OpenCV's universal intrinsics (128-bit: SSE on x86, NEON on ARM): GCC does
// not vectorise float sum/max reductions without -ffast-math, and these kernels are meant to
// run at memory speed. Each has a scalar twin for builds without CV_SIMD128.

namespace cvattn::detail {
namespace {

// Elements summed in float lanes before folding into the double total: bounds the float error.
constexpr std::int64_t kBlock = 2048;

#if CV_SIMD128
using cv::v_float32x4;

inline bool aligned16(const float* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }
#endif

}  // namespace

float plane_mean(const float* p, std::int64_t n) {
  double total = 0.0;
  std::int64_t i = 0;
#if CV_SIMD128
  const std::int64_t vec_end = n - n % 16;
  while (i < vec_end) {
    const std::int64_t block_end = std::min(vec_end, i + kBlock);
    v_float32x4 s0 = cv::v_setzero_f32(), s1 = s0, s2 = s0, s3 = s0;
    for (; i < block_end; i += 16) {
      s0 += cv::v_load(p + i);
      s1 += cv::v_load(p + i + 4);
      s2 += cv::v_load(p + i + 8);
      s3 += cv::v_load(p + i + 12);
    }
    total += static_cast<double>(cv::v_reduce_sum((s0 + s1) + (s2 + s3)));
  }
#endif
  for (; i < n; ++i) total += p[i];
  return static_cast<float>(total / static_cast<double>(n));
}

PlaneStats plane_mean_max(const float* p, std::int64_t n) {
  // The max skips NaN (maxps); a NaN always reaches the sum too, so the rare NaN-sum case
  // rescans for the NaN that torch.amax returns (a NaN sum may also be inf - inf).
  double total = 0.0;
  float mx = -std::numeric_limits<float>::infinity();
  std::int64_t i = 0;
#if CV_SIMD128
  const std::int64_t vec_end = n - n % 16;
  v_float32x4 m0 = cv::v_setall_f32(mx), m1 = m0, m2 = m0, m3 = m0;
  while (i < vec_end) {
    const std::int64_t block_end = std::min(vec_end, i + kBlock);
    v_float32x4 s0 = cv::v_setzero_f32(), s1 = s0, s2 = s0, s3 = s0;
    for (; i < block_end; i += 16) {
      const v_float32x4 a = cv::v_load(p + i), b = cv::v_load(p + i + 4),
                        c = cv::v_load(p + i + 8), d = cv::v_load(p + i + 12);
      s0 += a;
      s1 += b;
      s2 += c;
      s3 += d;
      m0 = cv::v_max(m0, a);
      m1 = cv::v_max(m1, b);
      m2 = cv::v_max(m2, c);
      m3 = cv::v_max(m3, d);
    }
    total += static_cast<double>(cv::v_reduce_sum((s0 + s1) + (s2 + s3)));
  }
  mx = cv::v_reduce_max(cv::v_max(cv::v_max(m0, m1), cv::v_max(m2, m3)));
#endif
  for (; i < n; ++i) {
    total += p[i];
    mx = p[i] > mx ? p[i] : mx;
  }
  if (std::isnan(total)) {
    for (std::int64_t k = 0; k < n; ++k) {
      if (std::isnan(p[k])) mx = p[k];
    }
  }
  return {static_cast<float>(total / static_cast<double>(n)), mx};
}

void scale_plane(const float* __restrict x, float* __restrict y, float g, std::int64_t n,
                 bool stream) {
  std::int64_t i = 0;
#if CV_SIMD128
  if (stream) {
    // Plain stores up to the first 16-byte boundary of y, then aligned streaming stores.
    for (; i < n && !aligned16(y + i); ++i) y[i] = x[i] * g;
    const v_float32x4 gv = cv::v_setall_f32(g);
    for (; i + 4 <= n; i += 4) cv::v_store_aligned_nocache(y + i, cv::v_load(x + i) * gv);
  }
#else
  (void)stream;
#endif
  for (; i < n; ++i) y[i] = x[i] * g;
}

void scale_plane2(const float* __restrict x, float* __restrict y, float g,
                  const float* __restrict s, std::int64_t n, bool stream) {
  std::int64_t i = 0;
#if CV_SIMD128
  if (stream) {
    for (; i < n && !aligned16(y + i); ++i) y[i] = (x[i] * g) * s[i];
    const v_float32x4 gv = cv::v_setall_f32(g);
    for (; i + 4 <= n; i += 4) {
      cv::v_store_aligned_nocache(y + i, (cv::v_load(x + i) * gv) * cv::v_load(s + i));
    }
  }
#else
  (void)stream;
#endif
  for (; i < n; ++i) y[i] = (x[i] * g) * s[i];
}

void store_fence() {
#if CVATTN_HAS_SFENCE
  _mm_sfence();
#endif
}

void channel_mean_max_scaled(const float* __restrict x, const float* __restrict g,
                             std::int64_t channels, std::int64_t hw, std::int64_t p0,
                             std::int64_t p1, float* __restrict mean, float* __restrict max) {
  const std::int64_t len = p1 - p0;
  float* __restrict sum = mean;  // accumulated in place, divided at the end
  {
    const float g0 = g[0];
    const float* xr = x + p0;
    for (std::int64_t p = 0; p < len; ++p) {
      const float v = xr[p] * g0;
      sum[p] = v;
      max[p] = v;
    }
  }
  // Four channels per sweep over the block (fewer L1 round trips of sum and max); the adds
  // stay in channel order, as a sequential torch.sum over dim 1.
  std::int64_t c = 1;
  for (; c + 4 <= channels; c += 4) {
    const float* x0 = x + c * hw + p0;
    const float* x1 = x0 + hw;
    const float* x2 = x1 + hw;
    const float* x3 = x2 + hw;
    const float g0 = g[c], g1 = g[c + 1], g2 = g[c + 2], g3 = g[c + 3];
    std::int64_t p = 0;
#if CV_SIMD128
    const v_float32x4 gv0 = cv::v_setall_f32(g0), gv1 = cv::v_setall_f32(g1),
                      gv2 = cv::v_setall_f32(g2), gv3 = cv::v_setall_f32(g3);
    for (; p + 4 <= len; p += 4) {
      const v_float32x4 a = cv::v_load(x0 + p) * gv0, b = cv::v_load(x1 + p) * gv1,
                        d = cv::v_load(x2 + p) * gv2, e = cv::v_load(x3 + p) * gv3;
      cv::v_store(sum + p, (((cv::v_load(sum + p) + a) + b) + d) + e);
      cv::v_store(max + p,
                  cv::v_max(cv::v_max(cv::v_max(cv::v_max(cv::v_load(max + p), a), b), d), e));
    }
#endif
    for (; p < len; ++p) {
      const float a = x0[p] * g0, b = x1[p] * g1, d = x2[p] * g2, e = x3[p] * g3;
      sum[p] = (((sum[p] + a) + b) + d) + e;
      float m = max[p];
      m = a > m ? a : m;
      m = b > m ? b : m;
      m = d > m ? d : m;
      max[p] = e > m ? e : m;
    }
  }
  for (; c < channels; ++c) {
    const float gc = g[c];
    const float* xr = x + c * hw + p0;
    for (std::int64_t p = 0; p < len; ++p) {
      const float v = xr[p] * gc;
      sum[p] += v;
      max[p] = v > max[p] ? v : max[p];
    }
  }
  const float count = static_cast<float>(channels);
  for (std::int64_t p = 0; p < len; ++p) {
    if (std::isnan(sum[p])) {
      // Rare: find the NaN (torch.amax propagates it), as opposed to inf - inf in the sum.
      for (std::int64_t k = 0; k < channels; ++k) {
        const float v = x[k * hw + p0 + p] * g[k];
        if (std::isnan(v)) max[p] = v;
      }
    }
    mean[p] = sum[p] / count;  // torch's mean: the sum, then a division by the count
  }
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

double dot(const float* a, const float* b, std::int64_t n) {
  // Four independent chains: the MLPs are short, so latency, not throughput, bounds them.
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += static_cast<double>(a[i]) * b[i];
    s1 += static_cast<double>(a[i + 1]) * b[i + 1];
    s2 += static_cast<double>(a[i + 2]) * b[i + 2];
    s3 += static_cast<double>(a[i + 3]) * b[i + 3];
  }
  for (; i < n; ++i) s0 += static_cast<double>(a[i]) * b[i];
  return (s0 + s1) + (s2 + s3);
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

void spatial_conv(const float* padded, const float* weight, std::int64_t k, std::int64_t h,
                  std::int64_t w, std::int64_t row0, std::int64_t row1, float* out) {
  const std::int64_t pad = (k - 1) / 2;
  const std::int64_t hp = h + 2 * pad, wp = w + 2 * pad;
  for (std::int64_t oy = row0; oy < row1; ++oy) {
    float* orow = out + oy * w;
    std::int64_t ox = 0;
#if CV_SIMD128
    // Eight outputs in two registers accumulate all 2*k*k taps before a single store.
    for (; ox + 8 <= w; ox += 8) {
      v_float32x4 a0 = cv::v_setzero_f32(), a1 = a0;
      for (std::int64_t ci = 0; ci < 2; ++ci) {
        for (std::int64_t ky = 0; ky < k; ++ky) {
          const float* prow = padded + (ci * hp + oy + ky) * wp + ox;
          const float* wrow = weight + (ci * k + ky) * k;
          for (std::int64_t kx = 0; kx < k; ++kx) {
            const v_float32x4 wk = cv::v_setall_f32(wrow[kx]);
            a0 = cv::v_fma(wk, cv::v_load(prow + kx), a0);
            a1 = cv::v_fma(wk, cv::v_load(prow + kx + 4), a1);
          }
        }
      }
      cv::v_store(orow + ox, a0);
      cv::v_store(orow + ox + 4, a1);
    }
    for (; ox + 4 <= w; ox += 4) {
      v_float32x4 a0 = cv::v_setzero_f32();
      for (std::int64_t ci = 0; ci < 2; ++ci) {
        for (std::int64_t ky = 0; ky < k; ++ky) {
          const float* prow = padded + (ci * hp + oy + ky) * wp + ox;
          const float* wrow = weight + (ci * k + ky) * k;
          for (std::int64_t kx = 0; kx < k; ++kx) {
            a0 = cv::v_fma(cv::v_setall_f32(wrow[kx]), cv::v_load(prow + kx), a0);
          }
        }
      }
      cv::v_store(orow + ox, a0);
    }
#endif
    for (; ox < w; ++ox) {
      float acc = 0.0f;
      for (std::int64_t ci = 0; ci < 2; ++ci) {
        for (std::int64_t ky = 0; ky < k; ++ky) {
          const float* prow = padded + (ci * hp + oy + ky) * wp + ox;
          const float* wrow = weight + (ci * k + ky) * k;
          for (std::int64_t kx = 0; kx < k; ++kx) acc += wrow[kx] * prow[kx];
        }
      }
      orow[ox] = acc;
    }
  }
}

}  // namespace cvattn::detail
