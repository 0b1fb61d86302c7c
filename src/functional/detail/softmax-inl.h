// Per-target bodies of functional/detail/softmax.hpp, compiled once for every Highway target by
// softmax.cpp and, inlined into the attention tiles, by sdpa_kernel.cpp (no include guard of the
// usual kind: the toggle below is Highway's convention). Full vector width (ScalableTag): 4 lanes
// on SSE4 and NEON, 8 on AVX2, 16 on AVX-512.
//
// softmax(s*scale + mask) is evaluated as 2^(y - max y) with y = s*(scale*log2 e) +
// mask*log2 e, which saves exp's ln2 range reduction; the attention kernels fold scale*log2 e
// into the packed keys, so no extra pass is needed.
//
// 2^y: with h = y - 1/2 (folded into the bias), n = round(h), f = h - n in [-1/2, 1/2], and a
// degree-4 polynomial for 2^(f + 1/2) (relative error 2.7e-6 in float32), times 2^n built in the
// exponent field. Because 2^(f + 1/2) >= 1, every result with n >= -126 is a normal float;
// h is clamped at -127, where the exponent field is 0 and the product is exactly +0: masked
// (-inf) keys get weight 0, tiny ones (y < -126.5, weight < 1e-38 of the row maximum) too, and
// no denormal (microcode-assisted, ~100x slower) value is ever produced. NaN stays NaN.
// Folding log2 e into the scale rounds once more: a weight's relative error grows by about
// |y - max y| * 6e-8, far inside the 1e-4 bar.
#if defined(CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_SOFTMAX_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "functional/detail/softmax.hpp"
#include "functional/detail/vector_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 1.5*2^23 + 127: adding it rounds v to an integer n (the float's ulp there is 1) and leaves
// n + 127 in the low mantissa bits, whose bits 9+ are those of 1.5*2^23 (low 9 bits zero):
// shifting left by 23 keeps exactly n + 127 in the exponent field, no integer add needed.
inline constexpr float kExp2Magic = 12583039.0f;

// max(lo, v), NaN in v kept. x86 Max returns the NaN operand; the emulated target's and
// AArch64's (NEON and SVE: IEEE maxNum) drop it, so they compare instead.
template <class V>
HWY_INLINE V ClampBelow(V lo, V v) {
#if HWY_TARGET == HWY_EMU128 || HWY_TARGET == HWY_SCALAR || HWY_ARCH_ARM_A64
  return hn::IfThenElse(hn::Lt(v, lo), lo, v);
#else
  return hn::Max(lo, v);
#endif
}

// 2^(f + 1/2) for f in [-1/2, 1/2]: minimax (relative error) coefficients fitted by Remez
// exchange and rounded to float, 2.7e-6 relative error evaluated in float32 (degree 5 gave 3e-7
// for one more FMA per vector; the attention tolerance is 1e-4). Horner is fewer ops than
// Estrin, and independent vectors hide its latency.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V Exp2HalfPoly(D d, V f) {
  V p = hn::MulAdd(hn::Set(d, 0.013534167781472206f), f, hn::Set(d, 0.07907979935407639f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.3397611975669861f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.9802222847938538f));
  return hn::MulAdd(p, f, hn::Set(d, 1.4142124652862549f));
}

// v[u] <- 2^(v[u] + 1/2) for U independent vectors, v clamped below at lo. A magic of
// kExp2Magic - c (c an integer) divides every result by 2^c for free.
template <int U, class D, class V = hn::VFromD<D>>
HWY_INLINE void Exp2HalfShifted(D d, V* v, V lo, V magic) {
  const hn::RebindToSigned<D> di;
  V t[U], f[U], p[U];
  for (int u = 0; u < U; ++u) {
    v[u] = ClampBelow(lo, v[u]);
    t[u] = hn::Add(v[u], magic);
  }
  for (int u = 0; u < U; ++u) f[u] = hn::Sub(v[u], hn::Sub(t[u], magic));
  for (int u = 0; u < U; ++u) p[u] = Exp2HalfPoly(d, f[u]);
  for (int u = 0; u < U; ++u) {
    const auto e = hn::ShiftLeft<23>(hn::BitCast(di, t[u]));
    v[u] = hn::Mul(p[u], hn::BitCast(d, e));
  }
}

template <int U, class D, class V = hn::VFromD<D>>
HWY_INLINE void Exp2HalfShifted(D d, V* v) {
  Exp2HalfShifted<U>(d, v, hn::Set(d, -127.0f), hn::Set(d, kExp2Magic));
}

// x[0, 2N) = 2^(v + 1/2) (Exp2HalfShifted of both vectors, clamped at lo), added to acc0/acc1.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE void Exp2StorePair(D d, V* v, V lo, V magic, float* HWY_RESTRICT x, V& acc0, V& acc1) {
  Exp2HalfShifted<2>(d, v, lo, magic);
  hn::StoreU(v[0], d, x);
  hn::StoreU(v[1], d, x + hn::Lanes(d));
  acc0 = hn::Add(acc0, v[0]);
  acc1 = hn::Add(acc1, v[1]);
}

// The softmax numerator of one row; see softmax2_numerator in softmax.hpp.
inline float Softmax2Numerator(float* HWY_RESTRICT x, std::int64_t n, const float* mask,
                               std::int64_t mask_step, std::int64_t allowed,
                               const float* known_max) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const std::int64_t N = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t a = allowed < n ? allowed : n;
  const bool row_mask = mask != nullptr && mask_step == 1;
  const float m0 = mask != nullptr && mask_step == 0 ? mask[0] * kLog2e : 0.0f;
  // Pass 1: maximum of y.
  float m = -std::numeric_limits<float>::infinity();
  std::int64_t j = 0;
  const V vl = hn::Set(d, kLog2e);
  if (known_max != nullptr && !row_mask) {
    j = a;
    m = *known_max;
  } else {
    V vmax0 = hn::Set(d, m), vmax1 = vmax0;
    if (row_mask) {
      for (; j + N <= a; j += N) {
        vmax0 = hn::Max(vmax0, hn::MulAdd(hn::LoadU(d, mask + j), vl, hn::LoadU(d, x + j)));
      }
    } else {
      for (; j + 2 * N <= a; j += 2 * N) {
        vmax0 = hn::Max(vmax0, hn::LoadU(d, x + j));
        vmax1 = hn::Max(vmax1, hn::LoadU(d, x + j + N));
      }
      for (; j + N <= a; j += N) vmax0 = hn::Max(vmax0, hn::LoadU(d, x + j));
    }
    m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(vmax0, vmax1)));
  }
  for (; j < a; ++j) {
    const float y = row_mask ? mask[j] * kLog2e + x[j] : x[j];
    m = y > m ? y : m;
  }
  m += m0;
  if (m == -std::numeric_limits<float>::infinity()) {
    // Every score -inf (fully masked: zeros), unless NaN hid from the max: then NaN, as the
    // plain softmax gives.
    bool nan = false;
    for (std::int64_t i = 0; i < a; ++i) {
      nan = nan || std::isnan(x[i]) || (row_mask && std::isnan(mask[i]));
    }
    const float fill = nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    for (std::int64_t i = 0; i < n; ++i) x[i] = i < a ? fill : 0.0f;
    return nan ? fill : 0.0f;
  }
  // Pass 2: x = 2^(y - max), summed. The bias carries -max, the shared mask value and the -1/2
  // that Exp2HalfShifted adds back.
  const V vbias = hn::Set(d, m0 - m - 0.5f);
  const V lo = hn::Set(d, -127.0f), magic = hn::Set(d, kExp2Magic);
  // The row's last whole vector of scores, before pass 2 overwrites them (for the tail).
  const V last_x = a >= N ? hn::LoadU(d, x + a - N) : hn::Zero(d);
  V acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  j = 0;
  if (row_mask) {
    for (; j + 2 * N <= a; j += 2 * N) {
      V v[2] = {
          hn::Add(hn::MulAdd(hn::LoadU(d, mask + j), vl, vbias), hn::LoadU(d, x + j)),
          hn::Add(hn::MulAdd(hn::LoadU(d, mask + j + N), vl, vbias), hn::LoadU(d, x + j + N))};
      Exp2StorePair(d, v, lo, magic, x + j, acc0, acc1);
    }
  } else {
    // Two vectors per step: more would spill the polynomial's constants on 16-register ISAs.
    for (; j + 2 * N <= a; j += 2 * N) {
      V v[2] = {hn::Add(hn::LoadU(d, x + j), vbias), hn::Add(hn::LoadU(d, x + j + N), vbias)};
      Exp2StorePair(d, v, lo, magic, x + j, acc0, acc1);
    }
  }
  // Remaining full vectors, then the tail (a libm call per element would cost more): on rows
  // of at least one vector, the last whole vector of the row, recomputed from its saved inputs
  // (the same operations give the already stored lanes the same values), its new lanes summed;
  // a copy through a buffer only for rows shorter than one vector.
  const auto y_at = [&](V xv, std::int64_t at) HWY_ATTR {
    return row_mask ? hn::Add(hn::MulAdd(hn::LoadU(d, mask + at), vl, vbias), xv)
                    : hn::Add(xv, vbias);
  };
  for (; j + N <= a; j += N) {
    V y = y_at(hn::LoadU(d, x + j), j);
    Exp2HalfShifted<1>(d, &y);
    hn::StoreU(y, d, x + j);
    acc0 = hn::Add(acc0, y);
  }
  if (j < a) {
    const std::int64_t count = a - j;
    if (a >= N) {
      V y = y_at(last_x, a - N);
      Exp2HalfShifted<1>(d, &y);
      hn::StoreU(y, d, x + a - N);
      acc1 =
          hn::Add(acc1, hn::IfThenZeroElse(hn::FirstN(d, static_cast<std::size_t>(N - count)), y));
    } else {
      V y = hn::Add(LoadTail(d, x + j, count), vbias);
      if (row_mask) y = hn::MulAdd(LoadTail(d, mask + j, count), vl, y);
      Exp2HalfShifted<1>(d, &y);
      y = hn::IfThenElseZero(hn::FirstN(d, static_cast<std::size_t>(count)), y);
      StoreTail(d, y, x + j, count);
      acc0 = hn::Add(acc0, y);
    }
  }
  const float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
  for (std::int64_t i = a; i < n; ++i) x[i] = 0.0f;
  return 1.0f / s;
}

// softmax2_numerator_unmasked in softmax.hpp. The shift by the maximum goes into the exponent
// instead of into every element: with the integer c = ceil(m), 2^(x - c) = 2^f * 2^(round(x) -
// c), f = x - round(x), and round(x) - c + 127 comes out of one add of (1.5*2^23 + 127 - c) to
// x. That saves the per-element bias add; the polynomial for 2^(f + 1/2) >= 1 scales every entry
// by sqrt(2), cancelled by 1/sum. Clamping x at c - 126.4 keeps each result a normal float
// (>= 2^-126; the largest is ~1): keys more than ~126 below the maximum get ~1e-38 of its weight
// instead of exactly 0.
inline float Softmax2NumeratorUnmasked(float* HWY_RESTRICT x, std::int64_t n, float m) {
  // Huge or non-finite maxima (inf / NaN inputs) take the general path, which handles them.
  if (n <= 0 || !(std::fabs(m) < 1048576.0f)) return Softmax2Numerator(x, n, nullptr, 0, n, &m);
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const std::int64_t N = static_cast<std::int64_t>(hn::Lanes(d));
  const float c = std::ceil(m);
  // The exponent field then holds round(x) - c + 127 (kExp2Magic - c is an integer, so the add
  // rounds x exactly as with kExp2Magic).
  const V lo = hn::Set(d, c - 126.4f), magic = hn::Set(d, kExp2Magic - c);
  const V last_x = n >= N ? hn::LoadU(d, x + n - N) : hn::Zero(d);
  V acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  std::int64_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    V v[2] = {hn::LoadU(d, x + j), hn::LoadU(d, x + j + N)};
    Exp2StorePair(d, v, lo, magic, x + j, acc0, acc1);
  }
  for (; j + N <= n; j += N) {
    V v = hn::LoadU(d, x + j);
    Exp2HalfShifted<1>(d, &v, lo, magic);
    hn::StoreU(v, d, x + j);
    acc0 = hn::Add(acc0, v);
  }
  if (j < n) {  // the tail as in Softmax2Numerator
    const std::int64_t count = n - j;
    if (n >= N) {
      V v = last_x;
      Exp2HalfShifted<1>(d, &v, lo, magic);
      hn::StoreU(v, d, x + n - N);
      acc1 =
          hn::Add(acc1, hn::IfThenZeroElse(hn::FirstN(d, static_cast<std::size_t>(N - count)), v));
    } else {
      V v = LoadTail(d, x + j, count);
      Exp2HalfShifted<1>(d, &v, lo, magic);
      v = hn::IfThenElseZero(hn::FirstN(d, static_cast<std::size_t>(count)), v);
      StoreTail(d, v, x + j, count);
      acc0 = hn::Add(acc0, v);
    }
  }
  return 1.0f / hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
}

// sum_a v[a] * tanh(x[a] + y[a]) (Bahdanau's additive score). tanh(t) = (e - 1) / (e + 1) with
// e = 2^(2t log2 e) from the exp2 above, saturated to +-1 for |t| > 9 where float tanh is +-1
// anyway; absolute error ~1e-7 (small |t| loses relative, not absolute, accuracy).
inline float AdditiveScore(const float* HWY_RESTRICT x, const float* HWY_RESTRICT y,
                           const float* HWY_RESTRICT v, std::int64_t n) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const std::int64_t N = static_cast<std::int64_t>(hn::Lanes(d));
  const V two_log2e = hn::Set(d, 2.0f * kLog2e), half = hn::Set(d, 0.5f);
  const V one = hn::Set(d, 1.0f), neg_lim = hn::Set(d, -9.0f), sign = hn::Set(d, -0.0f);
  V acc = hn::Zero(d);
  for (std::int64_t a = 0; a < n; a += N) {
    const std::int64_t count = n - a < N ? n - a : N;
    const bool full = count == N;
    const V t = hn::Add(full ? hn::LoadU(d, x + a) : LoadTail(d, x + a, count),
                        full ? hn::LoadU(d, y + a) : LoadTail(d, y + a, count));
    // tanh is odd: evaluate on -|t| (e <= 1, no overflow) and restore the sign.
    const V neg = hn::Or(t, sign);
    V e = hn::MulSub(hn::Max(neg, neg_lim), two_log2e, half);
    Exp2HalfShifted<1>(d, &e);
    const V th = hn::Div(hn::Sub(one, e), hn::Add(one, e));  // tanh|t|
    const V r = hn::Or(th, hn::And(t, sign));
    // v past the tail is 0, so the padded lanes add nothing.
    acc = hn::MulAdd(full ? hn::LoadU(d, v + a) : LoadTail(d, v + a, count), r, acc);
  }
  return hn::GetLane(hn::SumOfLanes(d, acc));
}

// out[s] = AdditiveScore(x, y + s * y_stride, v, n) for s < count: one dispatch per query row.
inline void AdditiveScores(const float* HWY_RESTRICT x, const float* y, std::int64_t y_stride,
                           const float* HWY_RESTRICT v, std::int64_t n, std::int64_t count,
                           float* HWY_RESTRICT out) {
  for (std::int64_t s = 0; s < count; ++s) out[s] = AdditiveScore(x, y + s * y_stride, v, n);
}

// Maximum of x[0..n) (-inf when n == 0); NaN entries may or may not be ignored.
inline float RowMax(const float* HWY_RESTRICT x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t N = static_cast<std::int64_t>(hn::Lanes(d));
  float m = -std::numeric_limits<float>::infinity();
  auto v0 = hn::Set(d, m), v1 = v0;
  std::int64_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    v0 = hn::Max(v0, hn::LoadU(d, x + j));
    v1 = hn::Max(v1, hn::LoadU(d, x + j + N));
  }
  m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(v0, v1)));
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// min over b < blocks of RowMax(x + b * block, block): one dispatch for all blocks of a row.
inline float MinOfBlockMaxima(const float* HWY_RESTRICT x, std::int64_t blocks,
                              std::int64_t block) {
  float m = std::numeric_limits<float>::infinity();
  for (std::int64_t b = 0; b < blocks; ++b) {
    const float r = RowMax(x + b * block, block);
    m = r < m ? r : m;
  }
  return m;
}

// dst[0..n) = x[0..n) * a (dst may be x), in full vectors.
inline void ScaleInto(const float* x, std::int64_t n, float a, float* dst) {
  const hn::ScalableTag<float> d;
  const std::int64_t N = static_cast<std::int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, a);
  if (n < N) {
    if (n > 0) StoreTail(d, hn::Mul(LoadTail(d, x, n), va), dst, n);
    return;
  }
  // The last whole vector, read before dst (which may be x) is written: it covers the tail.
  const auto last = hn::LoadU(d, x + n - N);
  for (std::int64_t j = 0; j + N <= n; j += N) {
    hn::StoreU(hn::Mul(hn::LoadU(d, x + j), va), d, dst + j);
  }
  hn::StoreU(hn::Mul(last, va), d, dst + n - N);
}

// dst[0..n) += x[0..n) * a.
inline void ScaleAddInto(const float* HWY_RESTRICT x, std::int64_t n, float a,
                         float* HWY_RESTRICT dst) {
  const hn::ScalableTag<float> d;
  const std::int64_t N = static_cast<std::int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, a);
  std::int64_t j = 0;
  for (; j + N <= n; j += N) {
    hn::StoreU(hn::MulAdd(hn::LoadU(d, x + j), va, hn::LoadU(d, dst + j)), d, dst + j);
  }
  for (; j < n; ++j) dst[j] += x[j] * a;
}

// softmax_row in softmax.hpp.
inline void SoftmaxRow(float* x, std::int64_t n, float scale, const float* mask,
                       std::int64_t mask_step, std::int64_t allowed) {
  const std::int64_t a = allowed < n ? allowed : n;
  ScaleInto(x, a, scale * kLog2e, x);
  const float inv = Softmax2Numerator(x, n, mask, mask_step, a, nullptr);
  if (inv != 0.0f) ScaleInto(x, a, inv, x);
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
