// Per-target bodies of functional/detail/sparse_kernels.hpp, compiled once for every Highway
// target by sparse_kernels.cpp (Highway's toggle instead of an include guard). The register tiles
// are named vectors (a0..a7), not arrays, so that the sizeless SVE vectors compile too.
#if defined(CVATTN_FUNCTIONAL_DETAIL_SPARSE_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_SPARSE_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_SPARSE_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_SPARSE_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tiles of up to this many accumulators (8 independent FMA chains: enough to cover the
// FMA latency on current cores, and 10 of the 16 vector registers of SSE4/AVX2/NEON).
constexpr int kMaxTile = 8;

// Splits [0, n) into the fewest runs of at most kMaxTile, balanced: run g is
// [n*g/runs, n*(g+1)/runs).
inline std::int64_t TileRuns(std::int64_t n) { return (n + kMaxTile - 1) / kMaxTile; }

// f(std::integral_constant<int, g>()) for a run of g in [1, kMaxTile] accumulators.
template <class F>
HWY_INLINE void WithTile(std::int64_t g, const F& f) {
  switch (g) {
    case 1:
      return f(std::integral_constant<int, 1>());
    case 2:
      return f(std::integral_constant<int, 2>());
    case 3:
      return f(std::integral_constant<int, 3>());
    case 4:
      return f(std::integral_constant<int, 4>());
    case 5:
      return f(std::integral_constant<int, 5>());
    case 6:
      return f(std::integral_constant<int, 6>());
    case 7:
      return f(std::integral_constant<int, 7>());
    default:
      return f(std::integral_constant<int, 8>());
  }
}

// The register tiles' two steps, over named accumulators a0..a7 passed by reference (SVE's
// sizeless vectors cannot be array elements or struct members): a_g += x * p[g * step ...] for
// g < G, and the store of a_g to out + g * stride.
template <int G, class D, class V>
HWY_INLINE void MulAddTile(D d, V x, const float* HWY_RESTRICT p, std::int64_t step, V& a0, V& a1,
                           V& a2, V& a3, V& a4, V& a5, V& a6, V& a7) {
  a0 = hn::MulAdd(x, hn::LoadU(d, p), a0);
  if constexpr (G > 1) a1 = hn::MulAdd(x, hn::LoadU(d, p + step), a1);
  if constexpr (G > 2) a2 = hn::MulAdd(x, hn::LoadU(d, p + 2 * step), a2);
  if constexpr (G > 3) a3 = hn::MulAdd(x, hn::LoadU(d, p + 3 * step), a3);
  if constexpr (G > 4) a4 = hn::MulAdd(x, hn::LoadU(d, p + 4 * step), a4);
  if constexpr (G > 5) a5 = hn::MulAdd(x, hn::LoadU(d, p + 5 * step), a5);
  if constexpr (G > 6) a6 = hn::MulAdd(x, hn::LoadU(d, p + 6 * step), a6);
  if constexpr (G > 7) a7 = hn::MulAdd(x, hn::LoadU(d, p + 7 * step), a7);
}

template <int G, class D, class V>
HWY_INLINE void StoreTile(D d, float* HWY_RESTRICT out, std::int64_t stride, V a0, V a1, V a2, V a3,
                          V a4, V a5, V a6, V a7) {
  hn::StoreU(a0, d, out);
  if constexpr (G > 1) hn::StoreU(a1, d, out + stride);
  if constexpr (G > 2) hn::StoreU(a2, d, out + 2 * stride);
  if constexpr (G > 3) hn::StoreU(a3, d, out + 3 * stride);
  if constexpr (G > 4) hn::StoreU(a4, d, out + 4 * stride);
  if constexpr (G > 5) hn::StoreU(a5, d, out + 5 * stride);
  if constexpr (G > 6) hn::StoreU(a6, d, out + 6 * stride);
  if constexpr (G > 7) hn::StoreU(a7, d, out + 7 * stride);
}

// --- local_scores_row ---

// G consecutive dx slots for one vector of x: k points at (channel 0, x + the first dx), out at
// the first slot's row (slots W apart). Each accumulator sums over the channels in order.
template <int G, class D>
HWY_INLINE void LocalScoresTile(D d, const float* HWY_RESTRICT q, std::int64_t q_cs,
                                const float* HWY_RESTRICT k, std::int64_t k_cs, std::int64_t C,
                                float* HWY_RESTRICT out, std::int64_t W) {
  const auto z = hn::Zero(d);
  auto a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
  for (std::int64_t c = 0; c < C; ++c) {
    const auto vq = hn::LoadU(d, q + c * q_cs);
    const float* HWY_RESTRICT kc = k + c * k_cs;
    MulAddTile<G>(d, vq, kc, 1, a0, a1, a2, a3, a4, a5, a6, a7);
  }
  StoreTile<G>(d, out, W, a0, a1, a2, a3, a4, a5, a6, a7);
}

inline void LocalScoresRow(const float* q, std::int64_t q_cs, const float* k, std::int64_t k_cs,
                           std::int64_t k_rs, std::int64_t C, std::int64_t W, std::int64_t D,
                           std::int64_t dy_lo, std::int64_t dy_hi, float* scores) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t side = 2 * D + 1;
  const std::int64_t runs = TileRuns(side);
  for (std::int64_t dy = dy_lo; dy <= dy_hi; ++dy) {
    const float* krow = k + dy * k_rs - D;  // at dx = -D
    float* srow = scores + (dy + D) * side * W;
    for (std::int64_t r = 0; r < runs; ++r) {
      const std::int64_t j0 = side * r / runs, j1 = side * (r + 1) / runs;
      if (W >= N) {
        // Whole vectors; the last one ends at W (overlapping its predecessor: the same values).
        for (std::int64_t x0 = 0; x0 < W; x0 += N) {
          const std::int64_t x = std::min(x0, W - N);
          WithTile(j1 - j0, [&](auto g) HWY_ATTR {
            LocalScoresTile<decltype(g)::value>(d, q + x, q_cs, krow + j0 + x, k_cs, C,
                                                srow + j0 * W + x, W);
          });
        }
        continue;
      }
      for (std::int64_t j = j0; j < j1; ++j) {
        for (std::int64_t x = 0; x < W; ++x) {
          float s = 0.0f;
          for (std::int64_t c = 0; c < C; ++c) s += q[c * q_cs + x] * krow[c * k_cs + j + x];
          srow[j * W + x] = s;
        }
      }
    }
  }
}

// --- local_sum_row ---

// G consecutive channels for one vector of x: v points at (channel c0, row y, x), out at
// (channel c0, x). Each accumulator sums over the window slots in order.
template <int G, class D>
HWY_INLINE void LocalSumTile(D d, const float* HWY_RESTRICT w, const float* HWY_RESTRICT v,
                             std::int64_t v_cs, std::int64_t v_rs, std::int64_t W, std::int64_t R,
                             std::int64_t dy_lo, std::int64_t dy_hi, float* HWY_RESTRICT out,
                             std::int64_t out_cs) {
  const std::int64_t side = 2 * R + 1;
  const auto z = hn::Zero(d);
  auto a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
  for (std::int64_t dy = dy_lo; dy <= dy_hi; ++dy) {
    const float* HWY_RESTRICT wrow = w + (dy + R) * side * W;
    const float* HWY_RESTRICT vrow = v + dy * v_rs - R;
    for (std::int64_t j = 0; j < side; ++j) {
      const auto vw = hn::LoadU(d, wrow + j * W);
      MulAddTile<G>(d, vw, vrow + j, v_cs, a0, a1, a2, a3, a4, a5, a6, a7);
    }
  }
  StoreTile<G>(d, out, out_cs, a0, a1, a2, a3, a4, a5, a6, a7);
}

// D is the window radius (named R inside the tiles, where D is the descriptor type).
inline void LocalSumRow(const float* w, const float* v, std::int64_t v_cs, std::int64_t v_rs,
                        std::int64_t Cv, std::int64_t W, std::int64_t R, std::int64_t dy_lo,
                        std::int64_t dy_hi, float* out, std::int64_t out_cs) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t side = 2 * R + 1;
  const std::int64_t runs = TileRuns(Cv);
  for (std::int64_t r = 0; r < runs; ++r) {
    const std::int64_t c0 = Cv * r / runs, c1 = Cv * (r + 1) / runs;
    if (W >= N) {
      for (std::int64_t x0 = 0; x0 < W; x0 += N) {
        const std::int64_t x = std::min(x0, W - N);
        WithTile(c1 - c0, [&](auto g) HWY_ATTR {
          LocalSumTile<decltype(g)::value>(d, w + x, v + c0 * v_cs + x, v_cs, v_rs, W, R, dy_lo,
                                           dy_hi, out + c0 * out_cs + x, out_cs);
        });
      }
      continue;
    }
    for (std::int64_t c = c0; c < c1; ++c) {
      for (std::int64_t x = 0; x < W; ++x) {
        float s = 0.0f;
        for (std::int64_t dy = dy_lo; dy <= dy_hi; ++dy) {
          for (std::int64_t j = 0; j < side; ++j) {
            s += w[((dy + R) * side + j) * W + x] * v[c * v_cs + dy * v_rs + x + j - R];
          }
        }
        out[c * out_cs + x] = s;
      }
    }
  }
}

// --- gathered_dots ---

// Four keys at a time, two accumulators each (alternate vectors of e): eight FMA chains sharing
// the loads of q. The lanes are summed at the end, the e tail in scalar code.
inline void GatheredDots(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k, std::int64_t E,
                         const std::int32_t* HWY_RESTRICT idx, std::int64_t count,
                         float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const float* HWY_RESTRICT k0 = k + static_cast<std::int64_t>(idx[i]) * E;
    const float* HWY_RESTRICT k1 = k + static_cast<std::int64_t>(idx[i + 1]) * E;
    const float* HWY_RESTRICT k2 = k + static_cast<std::int64_t>(idx[i + 2]) * E;
    const float* HWY_RESTRICT k3 = k + static_cast<std::int64_t>(idx[i + 3]) * E;
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    std::int64_t e = 0;
    for (; e + 2 * N <= E; e += 2 * N) {
      const auto q0 = hn::LoadU(d, q + e), q1 = hn::LoadU(d, q + e + N);
      a0 = hn::MulAdd(q0, hn::LoadU(d, k0 + e), a0);
      a1 = hn::MulAdd(q0, hn::LoadU(d, k1 + e), a1);
      a2 = hn::MulAdd(q0, hn::LoadU(d, k2 + e), a2);
      a3 = hn::MulAdd(q0, hn::LoadU(d, k3 + e), a3);
      b0 = hn::MulAdd(q1, hn::LoadU(d, k0 + e + N), b0);
      b1 = hn::MulAdd(q1, hn::LoadU(d, k1 + e + N), b1);
      b2 = hn::MulAdd(q1, hn::LoadU(d, k2 + e + N), b2);
      b3 = hn::MulAdd(q1, hn::LoadU(d, k3 + e + N), b3);
    }
    if (e + N <= E) {
      const auto q0 = hn::LoadU(d, q + e);
      a0 = hn::MulAdd(q0, hn::LoadU(d, k0 + e), a0);
      a1 = hn::MulAdd(q0, hn::LoadU(d, k1 + e), a1);
      a2 = hn::MulAdd(q0, hn::LoadU(d, k2 + e), a2);
      a3 = hn::MulAdd(q0, hn::LoadU(d, k3 + e), a3);
      e += N;
    }
    float s0 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, b0)));
    float s1 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a1, b1)));
    float s2 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a2, b2)));
    float s3 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a3, b3)));
    for (; e < E; ++e) {
      s0 += q[e] * k0[e];
      s1 += q[e] * k1[e];
      s2 += q[e] * k2[e];
      s3 += q[e] * k3[e];
    }
    out[i] = s0;
    out[i + 1] = s1;
    out[i + 2] = s2;
    out[i + 3] = s3;
  }
  for (; i < count; ++i) {
    const float* HWY_RESTRICT k0 = k + static_cast<std::int64_t>(idx[i]) * E;
    auto a0 = hn::Zero(d), b0 = a0;
    std::int64_t e = 0;
    for (; e + 2 * N <= E; e += 2 * N) {
      a0 = hn::MulAdd(hn::LoadU(d, q + e), hn::LoadU(d, k0 + e), a0);
      b0 = hn::MulAdd(hn::LoadU(d, q + e + N), hn::LoadU(d, k0 + e + N), b0);
    }
    if (e + N <= E) {
      a0 = hn::MulAdd(hn::LoadU(d, q + e), hn::LoadU(d, k0 + e), a0);
      e += N;
    }
    float s0 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, b0)));
    for (; e < E; ++e) s0 += q[e] * k0[e];
    out[i] = s0;
  }
}

// --- gathered_weighted_sum ---

// G consecutive vectors of channels (v and out offset to the first one), summed over the rows in
// order.
template <int G, class D>
HWY_INLINE void WeightedSumTile(D d, const float* HWY_RESTRICT w, const float* HWY_RESTRICT v,
                                std::int64_t Ev, const std::int32_t* HWY_RESTRICT idx,
                                std::int64_t count, float* HWY_RESTRICT out) {
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const auto z = hn::Zero(d);
  auto a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
  for (std::int64_t i = 0; i < count; ++i) {
    const auto vw = hn::Set(d, w[i]);
    const float* HWY_RESTRICT vr = v + static_cast<std::int64_t>(idx[i]) * Ev;
    MulAddTile<G>(d, vw, vr, N, a0, a1, a2, a3, a4, a5, a6, a7);
  }
  StoreTile<G>(d, out, N, a0, a1, a2, a3, a4, a5, a6, a7);
}

inline void GatheredWeightedSum(const float* w, const float* v, std::int64_t Ev,
                                const std::int32_t* idx, std::int64_t count, float* out) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  if (Ev < N) {
    for (std::int64_t c = 0; c < Ev; ++c) {
      float s = 0.0f;
      for (std::int64_t i = 0; i < count; ++i) s += w[i] * v[idx[i] * Ev + c];
      out[c] = s;
    }
    return;
  }
  // The whole vectors in balanced runs, then one more ending at Ev for the tail (overlapping the
  // last run: the same values).
  const std::int64_t full = Ev / N;
  const std::int64_t runs = TileRuns(full);
  for (std::int64_t r = 0; r < runs; ++r) {
    const std::int64_t j0 = full * r / runs, j1 = full * (r + 1) / runs;
    WithTile(j1 - j0, [&](auto g) HWY_ATTR {
      WeightedSumTile<decltype(g)::value>(d, w, v + j0 * N, Ev, idx, count, out + j0 * N);
    });
  }
  if (full * N < Ev) WeightedSumTile<1>(d, w, v + Ev - N, Ev, idx, count, out + Ev - N);
}

// ---- select_keys' exact top-k scans (sparse_kernels.hpp) ----

inline void NanAsLowest(const float* HWY_RESTRICT s, std::int64_t n, float* HWY_RESTRICT vals) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const auto lowest = hn::Set(d, -std::numeric_limits<float>::infinity());
  std::int64_t j = 0;
  for (; j + N <= n; j += N) {
    const auto v = hn::LoadU(d, s + j);
    hn::StoreU(hn::IfThenElse(hn::IsNaN(v), lowest, v), d, vals + j);
  }
  for (; j < n; ++j) vals[j] = std::isnan(s[j]) ? -std::numeric_limits<float>::infinity() : s[j];
}

// Appends value(i) for each lane i selected by m, in lane order, to out[count..], at most up to
// out[limit). Returns the new count. The lanes are taken one by one from the mask's bits:
// Highway 1.0.3's Compress on AVX2 copied its 1 KiB index table onto the stack on every call (a
// `rep movsq` or a `memcpy`: half of ValuesAtLeast's time, about a tenth of an exact top-k's;
// perf, Zen 5 at AVX2), and a compressing store to memory is microcoded on AMD Zen 4 and later.
// A top-k scan selects few lanes.
template <class D, class M, class Value, typename T>
HWY_INLINE std::int64_t AppendSelected(D d, M m, const Value& value, T* HWY_RESTRICT out,
                                       std::int64_t count, std::int64_t limit) {
  std::uint8_t bits[(hn::MaxLanes(d) + 7) / 8 + 8] = {};  // StoreMaskBits writes whole bytes
  hn::StoreMaskBits(d, m, bits);
  const std::size_t n = hn::Lanes(d);
  for (std::size_t i = 0; i < n && count < limit; ++i) {
    if ((bits[i >> 3] >> (i & 7)) & 1u) out[count++] = value(i);
  }
  return count;
}

inline std::int64_t ValuesAtLeast(const float* HWY_RESTRICT vals, std::int64_t n, float bound,
                                  float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const auto b = hn::Set(d, bound);
  std::int64_t count = 0, j = 0;
  for (; j + N <= n; j += N) {
    const auto v = hn::LoadU(d, vals + j);
    const auto m = hn::Ge(v, b);
    if (hn::AllFalse(d, m)) continue;
    count = AppendSelected(
        d, m, [&](std::size_t i) { return vals[j + i]; }, out, count, n);
  }
  for (; j < n; ++j) {
    if (vals[j] >= bound) out[count++] = vals[j];
  }
  return count;
}

inline std::int64_t IndicesWhere(const float* HWY_RESTRICT vals, std::int64_t n, float thr,
                                 bool above, std::int32_t* HWY_RESTRICT out, std::int64_t limit) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const auto t = hn::Set(d, thr);
  std::int64_t count = 0, j = 0;
  for (; j + N <= n && count < limit; j += N) {
    const auto v = hn::LoadU(d, vals + j);
    const auto m = above ? hn::Gt(v, t) : hn::Eq(v, t);
    if (hn::AllFalse(d, m)) continue;
    count = AppendSelected(
        d, m, [&](std::size_t i) { return static_cast<std::int32_t>(j + i); }, out, count, limit);
  }
  for (; j < n && count < limit; ++j) {
    if (above ? vals[j] > thr : vals[j] == thr) out[count++] = static_cast<std::int32_t>(j);
  }
  return count;
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
