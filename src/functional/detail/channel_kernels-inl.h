// Per-target bodies of functional/detail/channel_kernels.hpp, compiled once for every Highway
// target by channel_kernels.cpp (Highway's toggle instead of a plain include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_CHANNEL_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_CHANNEL_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_CHANNEL_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_CHANNEL_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>
#include <cstdint>

#include "functional/detail/reduce-inl.h"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y = x * g, or (with kTwo) y = (x * g) * s; stream: plain stores up to the first vector-aligned
// element of y, then aligned non-temporal stores.
template <bool kTwo>
void ScaleBody(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, float g,
               const float* HWY_RESTRICT s, std::int64_t n, bool stream) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto gv = hn::Set(d, g);
  auto scalar = [&](std::int64_t i) { y[i] = kTwo ? (x[i] * g) * s[i] : x[i] * g; };
  auto vec = [&](std::int64_t i) {
    auto v = hn::Mul(hn::LoadU(d, x + i), gv);
    if constexpr (kTwo) v = hn::Mul(v, hn::LoadU(d, s + i));
    return v;
  };
  std::int64_t i = 0;
  if (stream) {
    const auto align = static_cast<std::uintptr_t>(lanes) * sizeof(float);
    for (; i < n && reinterpret_cast<std::uintptr_t>(y + i) % align != 0; ++i) scalar(i);
    for (; i + lanes <= n; i += lanes) hn::Stream(vec(i), d, y + i);
  } else {
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
      const auto a = vec(i), b = vec(i + lanes);
      hn::StoreU(a, d, y + i);
      hn::StoreU(b, d, y + i + lanes);
    }
    for (; i + lanes <= n; i += lanes) hn::StoreU(vec(i), d, y + i);
  }
  for (; i < n; ++i) scalar(i);
}

inline void ScalePlane(const float* x, float* y, float g, std::int64_t n, bool stream) {
  ScaleBody<false>(x, y, g, nullptr, n, stream);
}

inline void ScalePlane2(const float* x, float* y, float g, const float* s, std::int64_t n,
                        bool stream) {
  ScaleBody<true>(x, y, g, s, n, stream);
}

// The SE/ECA squeeze of one plane: its mean, or (add_max, timm's add_maxpool) 0.5 * mean +
// 0.5 * max.
inline float PoolPlane(const float* HWY_RESTRICT p, std::int64_t hw, bool add_max) {
  if (!add_max) return ReducePlane<false>(p, hw).mean;
  const PlaneStats st = ReducePlane<true>(p, hw);
  return 0.5f * st.mean + 0.5f * st.max;
}

inline void PoolPlanes(const float* HWY_RESTRICT x, std::int64_t count, std::int64_t hw,
                       bool add_max, float* HWY_RESTRICT out) {
  for (std::int64_t c = 0; c < count; ++c) out[c] = PoolPlane(x + c * hw, hw, add_max);
}

// Planes [0, count) of y = x * g[c].
inline void ScalePlanes(const float* HWY_RESTRICT x, float* HWY_RESTRICT y,
                        const float* HWY_RESTRICT g, std::int64_t count, std::int64_t hw,
                        bool stream) {
  for (std::int64_t c = 0; c < count; ++c) {
    ScaleBody<false>(x + c * hw, y + c * hw, g[c], nullptr, hw, stream);
  }
}

// out[r] = float(sum_c w[r, c] * v[c] + bias[r]), summed in double: the floats promoted, four
// vector accumulators (the rows are short, so the adds' latency bounds them), then the lanes and
// the tail.
inline void DotRows(const float* HWY_RESTRICT w, std::int64_t rows, std::int64_t cols,
                    const float* HWY_RESTRICT v, const float* HWY_RESTRICT bias,
                    float* HWY_RESTRICT out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(dd));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* HWY_RESTRICT wr = w + r * cols;
    auto a0 = hn::Zero(dd), a1 = a0, a2 = a0, a3 = a0;
    auto term = [&](std::int64_t c) {
      return hn::Mul(hn::PromoteTo(dd, hn::LoadU(df, wr + c)),
                     hn::PromoteTo(dd, hn::LoadU(df, v + c)));
    };
    std::int64_t c = 0;
    for (; c + 4 * lanes <= cols; c += 4 * lanes) {
      a0 = hn::Add(a0, term(c));
      a1 = hn::Add(a1, term(c + lanes));
      a2 = hn::Add(a2, term(c + 2 * lanes));
      a3 = hn::Add(a3, term(c + 3 * lanes));
    }
    for (; c + lanes <= cols; c += lanes) a0 = hn::Add(a0, term(c));
    double acc = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
    for (; c < cols; ++c) acc += static_cast<double>(wr[c]) * v[c];
    if (bias != nullptr) acc += bias[r];
    out[r] = static_cast<float>(acc);
  }
}

inline void AffinePlane(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, float a, float b,
                        const float* HWY_RESTRICT r, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto av = hn::Set(d, a), bv = hn::Set(d, b);
  std::int64_t i = 0;
  if (r == nullptr) {
    for (; i + lanes <= n; i += lanes) {
      hn::StoreU(hn::Add(hn::Mul(hn::LoadU(d, x + i), av), bv), d, y + i);
    }
    for (; i < n; ++i) y[i] = x[i] * a + b;
  } else {
    for (; i + lanes <= n; i += lanes) {
      const auto v = hn::Add(hn::Mul(hn::LoadU(d, x + i), av), bv);
      hn::StoreU(hn::Add(v, hn::LoadU(d, r + i)), d, y + i);
    }
    for (; i < n; ++i) y[i] = (x[i] * a + b) + r[i];
  }
}

inline void ChannelMeanMaxScaled(const float* HWY_RESTRICT x, const float* HWY_RESTRICT g,
                                 std::int64_t channels, std::int64_t hw, std::int64_t p0,
                                 std::int64_t p1, float* HWY_RESTRICT mean,
                                 float* HWY_RESTRICT max) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t len = p1 - p0;
  float* HWY_RESTRICT sum = mean;  // accumulated in place, divided at the end
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
    const auto gv0 = hn::Set(d, g0), gv1 = hn::Set(d, g1), gv2 = hn::Set(d, g2),
               gv3 = hn::Set(d, g3);
    std::int64_t p = 0;
    for (; p + lanes <= len; p += lanes) {
      const auto a = hn::Mul(hn::LoadU(d, x0 + p), gv0), b = hn::Mul(hn::LoadU(d, x1 + p), gv1),
                 e = hn::Mul(hn::LoadU(d, x2 + p), gv2), f = hn::Mul(hn::LoadU(d, x3 + p), gv3);
      hn::StoreU(hn::Add(hn::Add(hn::Add(hn::Add(hn::LoadU(d, sum + p), a), b), e), f), d, sum + p);
      hn::StoreU(hn::Max(hn::Max(hn::Max(hn::Max(hn::LoadU(d, max + p), a), b), e), f), d, max + p);
    }
    for (; p < len; ++p) {
      const float a = x0[p] * g0, b = x1[p] * g1, e = x2[p] * g2, f = x3[p] * g3;
      sum[p] = (((sum[p] + a) + b) + e) + f;
      float m = max[p];
      m = a > m ? a : m;
      m = b > m ? b : m;
      m = e > m ? e : m;
      max[p] = f > m ? f : m;
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

// Output rows [row0, row1) of the 2 -> 1 channel k x k conv over the zero-padded planes: one
// vector of outputs accumulates all 2*k*k taps before a single store.
inline void SpatialConv(const float* HWY_RESTRICT padded, const float* HWY_RESTRICT weight,
                        std::int64_t k, std::int64_t h, std::int64_t w, std::int64_t row0,
                        std::int64_t row1, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t pad = (k - 1) / 2;
  const std::int64_t hp = h + 2 * pad, wp = w + 2 * pad;
  for (std::int64_t oy = row0; oy < row1; ++oy) {
    float* orow = out + oy * w;
    std::int64_t ox = 0;
    for (; ox + 2 * lanes <= w; ox += 2 * lanes) {
      auto a0 = hn::Zero(d), a1 = a0;
      for (std::int64_t ci = 0; ci < 2; ++ci) {
        for (std::int64_t ky = 0; ky < k; ++ky) {
          const float* prow = padded + (ci * hp + oy + ky) * wp + ox;
          const float* wrow = weight + (ci * k + ky) * k;
          for (std::int64_t kx = 0; kx < k; ++kx) {
            const auto wk = hn::Set(d, wrow[kx]);
            a0 = hn::MulAdd(wk, hn::LoadU(d, prow + kx), a0);
            a1 = hn::MulAdd(wk, hn::LoadU(d, prow + kx + lanes), a1);
          }
        }
      }
      hn::StoreU(a0, d, orow + ox);
      hn::StoreU(a1, d, orow + ox + lanes);
    }
    for (; ox + lanes <= w; ox += lanes) {
      auto a0 = hn::Zero(d);
      for (std::int64_t ci = 0; ci < 2; ++ci) {
        for (std::int64_t ky = 0; ky < k; ++ky) {
          const float* prow = padded + (ci * hp + oy + ky) * wp + ox;
          const float* wrow = weight + (ci * k + ky) * k;
          for (std::int64_t kx = 0; kx < k; ++kx) {
            a0 = hn::MulAdd(hn::Set(d, wrow[kx]), hn::LoadU(d, prow + kx), a0);
          }
        }
      }
      hn::StoreU(a0, d, orow + ox);
    }
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

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
