// Per-target bodies of functional/detail/pointwise_kernels.hpp, compiled once for every Highway
// target by pointwise_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_POINTWISE_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_POINTWISE_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_POINTWISE_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_POINTWISE_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

#include "functional/detail/activation_apply-inl.h"
#include "functional/detail/pointwise_kernels.hpp"

#ifndef CVATTN_PW_UNROLL
#define CVATTN_PW_UNROLL _Pragma("GCC unroll 8")
#endif

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tile: kRows output channels x kVecs vectors of positions, so that per input channel
// kVecs loads and kRows broadcasts feed kRows * kVecs FMAs; 12 accumulators fit AVX2's 16
// registers with the loads, 24 use most of AVX-512's 32.
constexpr int kRows = 6;
constexpr int kVecs = HWY_MAX_BYTES >= 64 ? 4 : 2;

// R rows x V vectors of the output: out[r * ldo + v L ...] = act(bias[r] + sum_c w[r k + c] x[c
// ldx + v L ...]).
template <ActLayer kAct, int R, int V, class D>
HWY_INLINE void PointwiseTile(D d, const float* HWY_RESTRICT w, std::int64_t k,
                              const float* HWY_RESTRICT x, std::int64_t ldx,
                              const float* HWY_RESTRICT bias, float* HWY_RESTRICT out,
                              std::int64_t ldo) {
  using Vec = hn::Vec<D>;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  Vec acc[R][V];
  CVATTN_PW_UNROLL
  for (int r = 0; r < R; ++r) {
    const Vec b = bias ? hn::Set(d, bias[r]) : hn::Zero(d);
    CVATTN_PW_UNROLL
    for (int v = 0; v < V; ++v) acc[r][v] = b;
  }
  for (std::int64_t c = 0; c < k; ++c) {
    const float* xr = x + c * ldx;
    Vec xv[V];
    CVATTN_PW_UNROLL
    for (int v = 0; v < V; ++v) xv[v] = hn::LoadU(d, xr + v * L);
    CVATTN_PW_UNROLL
    for (int r = 0; r < R; ++r) {
      const Vec wr = hn::Set(d, w[r * k + c]);
      CVATTN_PW_UNROLL
      for (int v = 0; v < V; ++v) acc[r][v] = hn::MulAdd(wr, xv[v], acc[r][v]);
    }
  }
  CVATTN_PW_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_PW_UNROLL
    for (int v = 0; v < V; ++v) {
      hn::StoreU(cvattn::detail::HWY_NAMESPACE::Apply<kAct>(d, acc[r][v]), d,
                 out + r * ldo + v * L);
    }
  }
}

// A tile with an activation as a function of its own: inlined, GCC hoists the activation's
// constants out of the loops over tiles, and with 24 accumulators, 4 loads and a broadcast in the
// AVX-512 tile one accumulator went to the stack inside the input-channel loop (a store and a
// reload on every FMA chain step; 1.25x the time of the native build's code for a 1x1 expansion
// with hard_swish, docs/performance.md).
template <ActLayer kAct, int R, int V, class D>
HWY_NOINLINE void PointwiseTileOutlined(D d, const float* HWY_RESTRICT w, std::int64_t k,
                                        const float* HWY_RESTRICT x, std::int64_t ldx,
                                        const float* HWY_RESTRICT bias, float* HWY_RESTRICT out,
                                        std::int64_t ldo) {
  PointwiseTile<kAct, R, V>(d, w, k, x, ldx, bias, out, ldo);
}

// Every row of one column block of V vectors: kRows rows at a time, then single rows.
template <ActLayer kAct, int V, class D>
HWY_INLINE void PointwiseColumns(D d, const float* HWY_RESTRICT w, std::int64_t m, std::int64_t k,
                                 const float* HWY_RESTRICT x, std::int64_t ldx,
                                 const float* HWY_RESTRICT bias, float* HWY_RESTRICT out,
                                 std::int64_t ldo) {
  std::int64_t r = 0;
  for (; r + kRows <= m; r += kRows) {
    if constexpr (kAct == ActLayer::identity) {
      PointwiseTile<kAct, kRows, V>(d, w + r * k, k, x, ldx, bias ? bias + r : nullptr,
                                    out + r * ldo, ldo);
    } else {
      PointwiseTileOutlined<kAct, kRows, V>(d, w + r * k, k, x, ldx, bias ? bias + r : nullptr,
                                            out + r * ldo, ldo);
    }
  }
  // Without an activation (the Winograd tile products, whose 64 or 128 rows leave 4 or 2) the
  // remaining rows take one tile of their own: single rows would make V loads per broadcast.
  if constexpr (kAct == ActLayer::identity) {
    const float* wr = w + r * k;
    const float* br = bias ? bias + r : nullptr;
    float* outr = out + r * ldo;
    switch (m - r) {
      case 5:
        return PointwiseTile<kAct, 5, V>(d, wr, k, x, ldx, br, outr, ldo);
      case 4:
        return PointwiseTile<kAct, 4, V>(d, wr, k, x, ldx, br, outr, ldo);
      case 3:
        return PointwiseTile<kAct, 3, V>(d, wr, k, x, ldx, br, outr, ldo);
      case 2:
        return PointwiseTile<kAct, 2, V>(d, wr, k, x, ldx, br, outr, ldo);
      default:
        break;
    }
  }
  for (; r < m; ++r) {
    PointwiseTile<kAct, 1, V>(d, w + r * k, k, x, ldx, bias ? bias + r : nullptr, out + r * ldo,
                              ldo);
  }
}

// Columns [j, n) when fewer than kVecs vectors remain: their whole vectors as one block, then
// the last n mod L positions through a zero-padded copy of their inputs and a padded output tile
// (the same arithmetic as every other position, and no access past a row).
template <ActLayer kAct, class D>
HWY_INLINE void PointwiseRest(D d, const float* HWY_RESTRICT w, std::int64_t m, std::int64_t k,
                              const float* HWY_RESTRICT x, std::int64_t ldx, std::int64_t n,
                              const float* HWY_RESTRICT bias, float* HWY_RESTRICT out,
                              std::int64_t ldo) {
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t whole = n / L;
  static_assert(kVecs <= 4, "the switch below covers up to 3 remaining vectors");
  switch (whole) {
    case 3:
      PointwiseColumns<kAct, 3>(d, w, m, k, x, ldx, bias, out, ldo);
      break;
    case 2:
      PointwiseColumns<kAct, 2>(d, w, m, k, x, ldx, bias, out, ldo);
      break;
    case 1:
      PointwiseColumns<kAct, 1>(d, w, m, k, x, ldx, bias, out, ldo);
      break;
    default:
      break;
  }
  const std::int64_t j = whole * L;
  if (j == n) return;
  const auto rest = static_cast<std::size_t>(n - j);
  HWY_ALIGN float panel[kPointwiseMaxK * HWY_MAX_BYTES / sizeof(float)];
  for (std::int64_t c = 0; c < k; ++c) {
    float* p = panel + c * L;
    std::memcpy(p, x + c * ldx + j, rest * sizeof(float));
    std::memset(p + rest, 0, (static_cast<std::size_t>(L) - rest) * sizeof(float));
  }
  HWY_ALIGN float tile[kRows * HWY_MAX_BYTES / sizeof(float)];
  std::int64_t r = 0;
  for (; r + kRows <= m; r += kRows) {
    PointwiseTile<kAct, kRows, 1>(d, w + r * k, k, panel, L, bias ? bias + r : nullptr, tile, L);
    for (int i = 0; i < kRows; ++i) {
      std::memcpy(out + (r + i) * ldo + j, tile + i * L, rest * sizeof(float));
    }
  }
  for (; r < m; ++r) {
    PointwiseTile<kAct, 1, 1>(d, w + r * k, k, panel, L, bias ? bias + r : nullptr, tile, L);
    std::memcpy(out + r * ldo + j, tile, rest * sizeof(float));
  }
}

template <ActLayer kAct>
void PointwiseLoop(const float* HWY_RESTRICT w, std::int64_t m, std::int64_t k,
                   const float* HWY_RESTRICT x, std::int64_t ldx, std::int64_t n,
                   const float* HWY_RESTRICT bias, float* HWY_RESTRICT out, std::int64_t ldo) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t j = 0;
  for (; j + kVecs * L <= n; j += kVecs * L) {
    PointwiseColumns<kAct, kVecs>(d, w, m, k, x + j, ldx, bias, out + j, ldo);
  }
  if (j < n) PointwiseRest<kAct>(d, w, m, k, x + j, ldx, n - j, bias, out + j, ldo);
}

// Input channels up to which this target's kernel was level with or ahead of fill + OpenBLAS +
// activation pass on the measured shapes of two CPUs (docs/performance.md#pointwise-convolution):
// beyond that the GEMM's packed panels win; with 256-bit vectors earlier, where 12 accumulators
// hide less of the strided loads of K input rows.
std::int64_t PointwisePreferredMaxK() { return HWY_MAX_BYTES >= 64 ? 112 : 80; }

void PointwiseAct(ActLayer act, const float* HWY_RESTRICT w, std::int64_t m, std::int64_t k,
                  const float* HWY_RESTRICT x, std::int64_t ldx, std::int64_t n,
                  const float* HWY_RESTRICT bias, float* HWY_RESTRICT out, std::int64_t ldo) {
  switch (act) {
    case ActLayer::identity:
      return PointwiseLoop<ActLayer::identity>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::relu:
      return PointwiseLoop<ActLayer::relu>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::relu6:
      return PointwiseLoop<ActLayer::relu6>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::hard_swish:
      return PointwiseLoop<ActLayer::hard_swish>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::hard_sigmoid:
      return PointwiseLoop<ActLayer::hard_sigmoid>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::sigmoid:
      return PointwiseLoop<ActLayer::sigmoid>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::silu:
      return PointwiseLoop<ActLayer::silu>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::tanh:
      return PointwiseLoop<ActLayer::tanh>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::gelu:
      return PointwiseLoop<ActLayer::gelu>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::gelu_tanh:
      return PointwiseLoop<ActLayer::gelu_tanh>(w, m, k, x, ldx, n, bias, out, ldo);
    case ActLayer::mish:
      return PointwiseLoop<ActLayer::mish>(w, m, k, x, ldx, n, bias, out, ldo);
  }
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
