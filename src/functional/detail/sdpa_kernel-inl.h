// Per-target bodies of the SDPA engine (sdpa_kernel.hpp), compiled once for every Highway target
// by sdpa_kernel.cpp (the toggle below is Highway's convention for such files).
//
// Per head, K and V are packed once into panels of P = 2N keys / value columns (N the target's
// float lanes: 4 on SSE4 and NEON, 8 on AVX2, 16 on AVX-512, so P = 8, 16 or 32): K transposed
// and scaled by scale*log2 e, its last panel P, N or N/2 wide (N/2 only for N >= 8: a half-width
// tile uses half-width FMAs, which on cores that split wide ops run at the same FLOP rate, so
// S = 196 wastes nothing instead of computing padded columns); V zero padded. Each block of query
// rows then runs all QK^T tiles, the softmax rows and all PV tiles, so the packed operand of each
// phase stays in L1 (one strip at a time through all three phases alternates K and V in L1 and
// measured ~20% slower with AVX2). The 6 x P register tiles (12 accumulators) keep both FMA pipes
// busy and fit 16 registers; nothing is repacked per block and nothing is zero-filled, unlike a
// general GEMM per block.
#if defined(CVATTN_FUNCTIONAL_DETAIL_SDPA_KERNEL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_SDPA_KERNEL_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_SDPA_KERNEL_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_SDPA_KERNEL_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "functional/detail/sdpa_kernel.hpp"
#include "functional/detail/softmax-inl.h"
#include "functional/detail/softmax.hpp"
#include "functional/detail/transpose-inl.h"

// The register tiles' loops over rows and vectors must unroll before GCC decides where the
// accumulator arrays live; otherwise it keeps a copy in memory and stores them every step.
#ifndef CVATTN_SDPA_UNROLL
#define CVATTN_SDPA_UNROLL _Pragma("GCC unroll 16")
#endif

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace sdpa {

using D = hn::ScalableTag<float>;
#if HWY_TARGET == HWY_SCALAR
using DH = D;  // one lane: no half vectors (never used: the narrow panel is then the full one)
#else
using DH = hn::Half<D>;
#endif

// Rows per register tile, and the lanes of one full vector.
inline constexpr std::int64_t kTileRows = 6;
HWY_INLINE std::int64_t Lanes() { return static_cast<std::int64_t>(hn::Lanes(D())); }
HWY_INLINE std::int64_t Panel() { return 2 * Lanes(); }
// The narrowest last key panel: a half vector where that is at least 4 floats.
HWY_INLINE std::int64_t NarrowPanel() { return Lanes() >= 8 ? Lanes() / 2 : Lanes(); }

HWY_INLINE std::int64_t RoundUp(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

// Width of the key panel starting at j0: P, except that the last one is cut to N or N/2.
HWY_INLINE std::int64_t PanelWidth(std::int64_t S, std::int64_t j0) {
  const std::int64_t n = S - j0;
  return n > Lanes() ? Panel() : n > NarrowPanel() ? Lanes() : NarrowPanel();
}

// Row stride of the score rows: every panel's full width.
HWY_INLINE std::int64_t PaddedKeys(std::int64_t S) {
  const std::int64_t full = S / Panel() * Panel();
  return full == S ? S : full + PanelWidth(S, full);
}

// Kp[j0 * E + e * w + jj] = K[j0 + jj][e] for the panel at j0 of width w (0 past S).
inline void PackK(const float* k, std::int64_t k_rs, std::int64_t S, std::int64_t E, float* kp) {
  const std::int64_t P = Panel();
  constexpr std::int64_t B = TransposeBlockSize();
  for (std::int64_t j0 = 0; j0 < S; j0 += P) {
    float* dst = kp + j0 * E;
    const std::int64_t w = PanelWidth(S, j0), n = std::min(w, S - j0);
    std::int64_t e0 = 0;
    if (n == P && P % B == 0) {  // full panels: register transposes
      for (; e0 + B <= E; e0 += B) {
        for (std::int64_t jb = 0; jb < P; jb += B) {
          TransposeBlock(k + (j0 + jb) * k_rs + e0, k_rs, dst + e0 * P + jb, P);
        }
      }
    }
    for (std::int64_t e = e0; e < E; ++e) {
      for (std::int64_t jj = 0; jj < n; ++jj) dst[e * w + jj] = k[(j0 + jj) * k_rs + e];
      for (std::int64_t jj = n; jj < w; ++jj) dst[e * w + jj] = 0.0f;
    }
  }
}

// Vp[cp][k][0..P) = V[k][cp*P + cc] (0 past Ev).
inline void PackV(const float* v, std::int64_t v_rs, std::int64_t S, std::int64_t Ev, float* vp) {
  const std::int64_t P = Panel();
  for (std::int64_t c0 = 0; c0 < Ev; c0 += P) {
    float* dst = vp + c0 * S;
    const std::int64_t n = std::min(P, Ev - c0);
    for (std::int64_t k = 0; k < S; ++k) {
      const float* src = v + k * v_rs + c0;
      for (std::int64_t cc = 0; cc < n; ++cc) dst[k * P + cc] = src[cc];
      for (std::int64_t cc = n; cc < P; ++cc) dst[k * P + cc] = 0.0f;
    }
  }
}

// c[r][0..W) = sum_e a[r][e] * bp[e][0..W) for r < R, W = NV vectors of tag DT (full or half
// width). With vmax, also folds the first `valid` columns into the running per-lane row maxima
// vmax[r][0..N) (the half-width tile into its first N/2 lanes), so the softmax needs no separate
// max pass. Always inlined into the strip's panel loop: the call and the ramp at each end of a
// 32-step tile cost ~2% of the kernel otherwise.
template <int R, int NV, class DT>
HWY_INLINE void TileQK(DT dt, const float* HWY_RESTRICT a, std::int64_t lda,
                       const float* HWY_RESTRICT bp, std::int64_t E, float* HWY_RESTRICT c,
                       std::int64_t ldc, float* HWY_RESTRICT vmax, std::int64_t valid) {
  using V = hn::VFromD<DT>;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(dt));
  const std::int64_t W = NV * L;
  V acc[R][NV];
  CVATTN_SDPA_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_SDPA_UNROLL
    for (int u = 0; u < NV; ++u) acc[r][u] = hn::Zero(dt);
  }
  for (std::int64_t e = 0; e < E; ++e) {
    V b[NV];
    CVATTN_SDPA_UNROLL
    for (int u = 0; u < NV; ++u) b[u] = hn::LoadU(dt, bp + e * W + L * u);
    CVATTN_SDPA_UNROLL
    for (int r = 0; r < R; ++r) {
      const V x = hn::Set(dt, a[r * lda + e]);
      CVATTN_SDPA_UNROLL
      for (int u = 0; u < NV; ++u) acc[r][u] = hn::MulAdd(x, b[u], acc[r][u]);
    }
  }
  CVATTN_SDPA_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_SDPA_UNROLL
    for (int u = 0; u < NV; ++u) hn::StoreU(acc[r][u], dt, c + r * ldc + L * u);
  }
  if (vmax == nullptr) return;
  const V lowest = hn::Set(dt, -std::numeric_limits<float>::infinity());
  const std::int64_t N = Lanes();
  CVATTN_SDPA_UNROLL
  for (int r = 0; r < R; ++r) {
    V m = lowest;
    CVATTN_SDPA_UNROLL
    for (int u = 0; u < NV; ++u) {
      // Zero-padded keys past S must not raise the maximum.
      const std::int64_t lanes = valid - L * u;
      if (lanes >= L) {
        m = hn::Max(m, acc[r][u]);
      } else if (lanes > 0) {
        m = hn::Max(
            m, hn::IfThenElse(hn::FirstN(dt, static_cast<std::size_t>(lanes)), acc[r][u], lowest));
      }
    }
    float* vm = vmax + r * N;
    hn::StoreU(hn::Max(hn::LoadU(dt, vm), m), dt, vm);
  }
}

// out[r][0..cols) = scale[r] * sum_{k<K} p[r][k] * vp[k][0..W) for r < R, W = NV vectors of tag
// DT (full or half width) from the start of each P-float panel row: value panels narrower than
// P (a head dim of 8 on a 16-lane target) then multiply no zero columns.
template <int R, int NV, class DT>
HWY_INLINE void TilePV(DT dt, const float* HWY_RESTRICT p, std::int64_t ldp,
                       const float* HWY_RESTRICT vp, std::int64_t K, float* HWY_RESTRICT out,
                       std::int64_t ldo, std::int64_t cols, const float* scale) {
  using V = hn::VFromD<DT>;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(dt)), P = Panel();
  V acc[R][NV];
  CVATTN_SDPA_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_SDPA_UNROLL
    for (int u = 0; u < NV; ++u) acc[r][u] = hn::Zero(dt);
  }
  for (std::int64_t k = 0; k < K; ++k) {
    V b[NV];
    CVATTN_SDPA_UNROLL
    for (int u = 0; u < NV; ++u) b[u] = hn::LoadU(dt, vp + k * P + L * u);
    CVATTN_SDPA_UNROLL
    for (int r = 0; r < R; ++r) {
      const V x = hn::Set(dt, p[r * ldp + k]);
      CVATTN_SDPA_UNROLL
      for (int u = 0; u < NV; ++u) acc[r][u] = hn::MulAdd(x, b[u], acc[r][u]);
    }
  }
  CVATTN_SDPA_UNROLL
  for (int r = 0; r < R; ++r) {
    const V s = hn::Set(dt, scale[r]);
    float* dst = out + r * ldo;
    if (cols == NV * L) {
      CVATTN_SDPA_UNROLL
      for (int u = 0; u < NV; ++u) hn::StoreU(hn::Mul(acc[r][u], s), dt, dst + L * u);
    } else {
      HWY_ALIGN float tmp[NV * hn::MaxLanes(dt)];
      CVATTN_SDPA_UNROLL
      for (int u = 0; u < NV; ++u) hn::Store(hn::Mul(acc[r][u], s), dt, tmp + L * u);
      std::memcpy(dst, tmp, static_cast<std::size_t>(cols) * sizeof(float));
    }
  }
}

template <int R>
HWY_NOINLINE void QkStrip(const SdpaPlan& p, const float* qrow, const float* kp, std::int64_t kmax,
                          std::int64_t Sp, float* scores, float* vmax) {
  const D d;
  const DH dh;
  const std::int64_t P = Panel();
  for (std::int64_t j0 = 0; j0 < kmax; j0 += P) {
    const float* panel = kp + j0 * p.E;
    const std::int64_t w = PanelWidth(p.S, j0);
    if (w == P) {
      TileQK<R, 2>(d, qrow, p.q_rs, panel, p.E, scores + j0, Sp, vmax, p.S - j0);
    } else if (w == Lanes()) {
      TileQK<R, 1>(d, qrow, p.q_rs, panel, p.E, scores + j0, Sp, vmax, p.S - j0);
    } else {
      TileQK<R, 1>(dh, qrow, p.q_rs, panel, p.E, scores + j0, Sp, vmax, p.S - j0);
    }
  }
}

template <int R>
HWY_NOINLINE void PvStrip(const SdpaPlan& p, const float* probs, std::int64_t ldp, const float* vp,
                          std::int64_t kmax, float* out, const float* inv) {
  const D d;
  const DH dh;
  const std::int64_t P = Panel();
  for (std::int64_t c0 = 0; c0 < p.Ev; c0 += P) {
    const std::int64_t cols = std::min(P, p.Ev - c0);
    const float* panel = vp + c0 * p.S;
    const std::int64_t w = PanelWidth(p.Ev, c0);  // the same cut as the key panels
    if (w == P) {
      TilePV<R, 2>(d, probs, ldp, panel, kmax, out + c0, p.out_rs, cols, inv);
    } else if (w == Lanes()) {
      TilePV<R, 1>(d, probs, ldp, panel, kmax, out + c0, p.out_rs, cols, inv);
    } else {
      TilePV<R, 1>(dh, probs, ldp, panel, kmax, out + c0, p.out_rs, cols, inv);
    }
  }
}

// Calls f(std::integral_constant<int, R>()) for the strip height R in [1, 6] (the tiles are
// templates on R).
template <class F>
HWY_INLINE void WithRows(std::int64_t R, const F& f) {
  switch (R) {
    case 6:
      f(std::integral_constant<int, 6>());
      break;
    case 5:
      f(std::integral_constant<int, 5>());
      break;
    case 4:
      f(std::integral_constant<int, 4>());
      break;
    case 3:
      f(std::integral_constant<int, 3>());
      break;
    case 2:
      f(std::integral_constant<int, 2>());
      break;
    default:
      f(std::integral_constant<int, 1>());
      break;
  }
}

// Row i of head h's normalised weights (numerators x[0..kmax) times inv, 0 past kmax) into the
// result: stored per head, or accumulated into its head group's mean.
inline void EmitWeights(const SdpaPlan& p, std::int64_t h, std::int64_t i, const float* x,
                        std::int64_t kmax, float inv) {
  const float a = inv != 0.0f ? inv : 1.0f;  // inv = 0: x is all 0 (fully masked) or NaN already
  if (p.weights != nullptr) {
    float* w = p.weights + (h * p.L + i) * p.S;
    ScaleInto(x, kmax, a, w);
    zero_row(w + kmax, p.S - kmax);
    return;
  }
  const std::int64_t g = p.avg_group;
  float* w = p.weights_avg + ((h / g) * p.L + i) * p.S;
  const float b = a / static_cast<float>(g);
  if (h % g == 0) {  // the group's first head starts the sum
    ScaleInto(x, kmax, b, w);
    zero_row(w + kmax, p.S - kmax);
  } else {
    ScaleAddInto(x, kmax, b, w);
  }
}

}  // namespace sdpa

// Scratch floats one thread needs for blocks of `block` query rows.
inline std::int64_t SdpaScratchSize(const SdpaPlan& p, std::int64_t block) {
  using namespace sdpa;  // NOLINT
  const std::int64_t Sp = PaddedKeys(p.S);
  return Sp * p.E + RoundUp(p.Ev, Panel()) * p.S + block * (Sp + Lanes() + 1);
}

// One block of query rows of head h, in three phases so that each phase's operand stays in L1:
// all QK tiles (packed K), then the softmax rows, then all PV tiles (packed V). With pack, K and
// V of head h are packed into the scratch first (else they are there from the previous block).
inline void SdpaRunBlock(const SdpaPlan& p, std::int64_t h, std::int64_t r0, std::int64_t rows,
                         std::int64_t block, float* scratch, bool pack) {
  using namespace sdpa;  // NOLINT
  const D d;
  const std::int64_t N = Lanes(), P = Panel();
  const std::int64_t Sp = PaddedKeys(p.S);
  float* kp = scratch;
  float* vp = kp + Sp * p.E;
  float* scores = vp + RoundUp(p.Ev, P) * p.S;
  float* vmax = scores + block * Sp;
  float* inv = vmax + block * N;
  if (pack) {
    // Folding scale*log2(e) into the packed keys (once per head, in L1) leaves the softmax a
    // bare exp2 of score - max, and the QK tiles read the queries in place.
    PackK(p.k + p.k_off[h], p.k_rs, p.S, p.E, kp);
    ScaleInto(kp, Sp * p.E, p.scale * kLog2e, kp);
    PackV(p.v + p.v_off[h], p.v_rs, p.S, p.Ev, vp);
  }
  const float* q = p.q + p.q_off[h] + r0 * p.q_rs;
  // Row maxima come out of the QK tiles unless a per-key mask or the causal limit changes
  // which scores count.
  const bool fused_max = !p.causal && (p.mask == nullptr || p.mask_cs == 0);
  if (fused_max) {
    for (std::int64_t i = 0; i < rows * N; ++i) vmax[i] = -std::numeric_limits<float>::infinity();
  }
  // Causal rows never look past their own index: those keys are skipped in both products.
  const auto kmax_of = [&](std::int64_t s0, std::int64_t R) {
    return p.causal ? std::min(p.S, r0 + s0 + R) : p.S;
  };
  for (std::int64_t s0 = 0; s0 < rows; s0 += kTileRows) {
    const std::int64_t R = std::min(kTileRows, rows - s0);
    // HWY_ATTR: clang compiles lambdas without the target's instruction set otherwise.
    WithRows(R, [&](auto n) HWY_ATTR {
      QkStrip<decltype(n)::value>(p, q + s0 * p.q_rs, kp, kmax_of(s0, R), Sp, scores + s0 * Sp,
                                  fused_max ? vmax + s0 * N : nullptr);
    });
  }
  // Softmax: the numerators stay in scratch for P V, whose output rows are scaled by 1/sum
  // instead (that rounds differently from normalising first, by ~1 ulp); the normalised
  // weights, when wanted, are written once, straight to the result tensor.
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = r0 + r;
    const std::int64_t s0 = r - r % kTileRows;  // the strip this row belongs to
    const std::int64_t kmax = kmax_of(s0, std::min(kTileRows, rows - s0));
    const float* mask = p.mask ? p.mask + p.mask_off[h] + i * p.mask_rs : nullptr;
    float* row = scores + r * Sp;
    const float row_max =
        fused_max ? hn::GetLane(hn::MaxOfLanes(d, hn::LoadU(d, vmax + r * N))) : 0.0f;
    if (fused_max && mask == nullptr) {
      inv[r] = Softmax2NumeratorUnmasked(row, kmax, row_max);
    } else {
      inv[r] = Softmax2Numerator(row, kmax, mask, p.mask_cs, p.causal ? i + 1 : p.S,
                                 fused_max ? &row_max : nullptr);
    }
    if (p.weights || p.weights_avg) EmitWeights(p, h, i, row, kmax, inv[r]);
  }
  float* out = p.out + p.out_off[h] + r0 * p.out_rs;
  for (std::int64_t s0 = 0; s0 < rows; s0 += kTileRows) {
    const std::int64_t R = std::min(kTileRows, rows - s0);
    WithRows(R, [&](auto n) HWY_ATTR {
      PvStrip<decltype(n)::value>(p, scores + s0 * Sp, Sp, vp, kmax_of(s0, R), out + s0 * p.out_rs,
                                  inv + s0);
    });
  }
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
