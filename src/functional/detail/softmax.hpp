#pragma once
// Vectorised row primitives shared by the attention kernels: a fast exp2, a numerically stable
// softmax of one row, the additive (tanh) score and a row maximum. Private to cvattn.
// CVATTN_DETAIL_AVX2 selects the AVX2+FMA code paths (set by -march=native on such CPUs); every
// function has a portable scalar path.
//
// softmax(s*scale + mask) is evaluated as 2^(y - max y) with y = s*(scale*log2 e) +
// mask*log2 e, which saves exp's ln2 range reduction; the attention kernels fold
// scale*log2 e into an operand of the score GEMM (the packed keys on AVX2, the queries
// otherwise), so no extra pass is needed.
//
// 2^y: with h = y - 1/2 (folded into the bias), n = round(h), f = h - n in [-1/2, 1/2], and a
// degree-4 polynomial for 2^(f + 1/2) (relative error 2.7e-6 in float32), times 2^n built in the
// exponent field. Because 2^(f + 1/2) >= 1, every result with n >= -126 is a normal float;
// h is clamped at -127, where the exponent field is 0 and the product is exactly +0: masked
// (-inf) keys get weight 0, tiny ones (y < -126.5, weight < 1e-38 of the row maximum) too, and
// no denormal (microcode-assisted, ~100x slower) value is ever produced. NaN stays NaN.
// Folding log2 e into the scale rounds once more: a weight's relative error grows by about
// |y - max y| * 6e-8, far inside the 1e-4 bar.
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define CVATTN_DETAIL_AVX2 1
#endif

namespace cvattn::detail {

inline constexpr float kLog2e = 1.44269504088896341f;

inline float exp2_scalar(float y) { return y < -126.5f ? 0.0f : std::exp2(y); }

#if CVATTN_DETAIL_AVX2
// 2^(f + 1/2) for f in [-1/2, 1/2]: minimax (relative error) coefficients fitted by Remez
// exchange and rounded to float, 2.7e-6 relative error evaluated in float32 (degree 5 gave 3e-7
// for one more FMA per 8 values; the attention tolerance is 1e-4). Horner is fewer ops than
// Estrin, and independent vectors hide its latency.
inline __m256 exp2_half_poly(__m256 f) {
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(0.013534167781472206f), f,
                             _mm256_set1_ps(0.07907979935407639f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.3397611975669861f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.9802222847938538f));
  return _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.4142124652862549f));
}

// 1.5*2^23 + 127: adding it rounds v to an integer n (the float's ulp there is 1) and leaves
// n + 127 in the low mantissa bits, whose bits 9+ are those of 1.5*2^23 (low 9 bits zero):
// shifting left by 23 keeps exactly n + 127 in the exponent field, no integer add needed.
inline constexpr float kExp2Magic = 12583039.0f;

// v[u] <- 2^(v[u] + 1/2) for U independent vectors, v clamped below at lo. A magic of
// kExp2Magic - c (c an integer) divides every result by 2^c for free.
template <int U>
inline void exp2_half_shifted(__m256* v, __m256 lo = _mm256_set1_ps(-127.0f),
                              __m256 magic = _mm256_set1_ps(kExp2Magic)) {
  __m256 t[U], f[U], p[U];
  for (int u = 0; u < U; ++u) {
    // Operand order keeps NaN: max returns its second operand when either is NaN.
    v[u] = _mm256_max_ps(lo, v[u]);
    t[u] = _mm256_add_ps(v[u], magic);
  }
  for (int u = 0; u < U; ++u) f[u] = _mm256_sub_ps(v[u], _mm256_sub_ps(t[u], magic));
  for (int u = 0; u < U; ++u) p[u] = exp2_half_poly(f[u]);
  for (int u = 0; u < U; ++u) {
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(t[u]), 23);
    v[u] = _mm256_mul_ps(p[u], _mm256_castsi256_ps(e));
  }
}

inline float hmax256(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lanes [0, count) set, for the masked tail of a row (0 < count < 8).
inline __m256i tail_lanes(std::int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// x[0..count) = the first count lanes of v (0 < count < 8), without a masked store (microcoded
// and slow on some AMD cores).
inline void store_tail(float* x, __m256 v, std::int64_t count) {
  __m128 h = _mm256_castps256_ps128(v);
  if (count >= 4) {
    _mm_storeu_ps(x, h);
    h = _mm256_extractf128_ps(v, 1);
    x += 4;
    count -= 4;
  }
  if (count >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(x), h);
    h = _mm_movehl_ps(h, h);
    x += 2;
    count -= 2;
  }
  if (count == 1) _mm_store_ss(x, h);
}
#endif

// Softmax numerator of one row of scores already in log2 units (s * scale * log2 e):
// x[j] <- 2^(x[j] + mask[j*mask_step]*log2 e - max) for j < allowed, 0 for allowed <= j < n.
// Returns 1/sum, or 0 when every allowed entry is -inf (or allowed == 0); the row is then all
// zeros (PyTorch >= 2.5's "safe softmax"). mask (natural-log units, additive) may be null;
// mask_step is 0 (one value for the whole row) or 1. known_max, when given, is max_j x[j]
// over j < allowed (computed by the caller while producing x) and saves the max pass; it is
// only valid without a per-key mask.
inline float softmax2_numerator(float* x, std::int64_t n, const float* mask,
                                std::int64_t mask_step, std::int64_t allowed,
                                const float* known_max = nullptr) {
  const std::int64_t a = allowed < n ? allowed : n;
  const bool row_mask = mask != nullptr && mask_step == 1;
  const float m0 = mask != nullptr && mask_step == 0 ? mask[0] * kLog2e : 0.0f;
  // Pass 1: maximum of y.
  float m = -std::numeric_limits<float>::infinity();
  std::int64_t j = 0;
#if CVATTN_DETAIL_AVX2
  const __m256 vl = _mm256_set1_ps(kLog2e);
  __m256 vmax0 = _mm256_set1_ps(m), vmax1 = vmax0;
  if (known_max != nullptr && !row_mask) {
    j = a;
    vmax0 = _mm256_set1_ps(*known_max);
  } else if (row_mask) {
    for (; j + 8 <= a; j += 8) {
      vmax0 = _mm256_max_ps(
          vmax0, _mm256_fmadd_ps(_mm256_loadu_ps(mask + j), vl, _mm256_loadu_ps(x + j)));
    }
  } else {
    for (; j + 16 <= a; j += 16) {
      vmax0 = _mm256_max_ps(vmax0, _mm256_loadu_ps(x + j));
      vmax1 = _mm256_max_ps(vmax1, _mm256_loadu_ps(x + j + 8));
    }
    for (; j + 8 <= a; j += 8) vmax0 = _mm256_max_ps(vmax0, _mm256_loadu_ps(x + j));
  }
  m = hmax256(_mm256_max_ps(vmax0, vmax1));
#endif
  if (known_max != nullptr && !row_mask) {
    j = a;
    m = *known_max;
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
  // that exp2_half_shifted adds back.
  const float bias = m0 - m - 0.5f;
  float s = 0.0f;
  j = 0;
#if CVATTN_DETAIL_AVX2
  const __m256 vbias = _mm256_set1_ps(bias);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  if (row_mask) {
    for (; j + 16 <= a; j += 16) {
      __m256 v[2] = {
          _mm256_add_ps(_mm256_fmadd_ps(_mm256_loadu_ps(mask + j), vl, vbias),
                        _mm256_loadu_ps(x + j)),
          _mm256_add_ps(_mm256_fmadd_ps(_mm256_loadu_ps(mask + j + 8), vl, vbias),
                        _mm256_loadu_ps(x + j + 8))};
      exp2_half_shifted<2>(v);
      _mm256_storeu_ps(x + j, v[0]);
      _mm256_storeu_ps(x + j + 8, v[1]);
      acc0 = _mm256_add_ps(acc0, v[0]);
      acc1 = _mm256_add_ps(acc1, v[1]);
    }
  } else {
    // Two vectors per step: more would spill the polynomial's constants.
    for (; j + 16 <= a; j += 16) {
      __m256 v[2] = {_mm256_add_ps(_mm256_loadu_ps(x + j), vbias),
                     _mm256_add_ps(_mm256_loadu_ps(x + j + 8), vbias)};
      exp2_half_shifted<2>(v);
      _mm256_storeu_ps(x + j, v[0]);
      _mm256_storeu_ps(x + j + 8, v[1]);
      acc0 = _mm256_add_ps(acc0, v[0]);
      acc1 = _mm256_add_ps(acc1, v[1]);
    }
  }
  // Remaining full vectors and the masked tail (a libm call per element would cost more).
  for (; j < a; j += 8) {
    const __m256i lanes = j + 8 <= a ? _mm256_set1_epi32(-1) : tail_lanes(a - j);
    __m256 y = _mm256_add_ps(_mm256_maskload_ps(x + j, lanes), vbias);
    if (row_mask) {
      y = _mm256_fmadd_ps(_mm256_maskload_ps(mask + j, lanes), vl, y);
    }
    exp2_half_shifted<1>(&y);
    y = _mm256_and_ps(y, _mm256_castsi256_ps(lanes));
    if (j + 8 <= a) {
      _mm256_storeu_ps(x + j, y);
    } else {
      store_tail(x + j, y, a - j);
    }
    acc0 = _mm256_add_ps(acc0, y);
  }
  s = hsum256(_mm256_add_ps(acc0, acc1));
#else
  for (; j < a; ++j) {
    const float e = exp2_scalar(x[j] + (row_mask ? mask[j] * kLog2e : 0.0f) + bias + 0.5f);
    x[j] = e;
    s += e;
  }
#endif
  for (std::int64_t i = a; i < n; ++i) x[i] = 0.0f;
  return 1.0f / s;
}

// softmax2_numerator for a row without mask whose maximum m is known (from the score tiles),
// up to a common factor of all entries (which 1/sum cancels): the hot path of attention.
// The shift by the maximum goes into the exponent instead of into every element: with the
// integer c = ceil(m), 2^(x - c) = 2^f * 2^(round(x) - c), f = x - round(x), and round(x) - c
// + 127 comes out of one add of (1.5*2^23 + 127 - c) to x. That saves the per-element bias add;
// the polynomial for 2^(f + 1/2) >= 1 scales every entry by sqrt(2), cancelled by 1/sum.
// Clamping x at c - 126.4 keeps each result a normal float (>= 2^-126; the largest is ~1):
// keys more than ~126 below the maximum get ~1e-38 of its weight instead of exactly 0.
inline float softmax2_numerator_unmasked(float* x, std::int64_t n, float m) {
#if CVATTN_DETAIL_AVX2
  // Huge or non-finite maxima (inf / NaN inputs) take the general path, which handles them.
  if (n > 0 && std::fabs(m) < 1048576.0f) {
    const float c = std::ceil(m);
    // The exponent field then holds round(x) - c + 127 (kExp2Magic - c is an integer, so the
    // add rounds x exactly as with kExp2Magic).
    const __m256 lo = _mm256_set1_ps(c - 126.4f), magic = _mm256_set1_ps(kExp2Magic - c);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    std::int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      __m256 v[2] = {_mm256_loadu_ps(x + j), _mm256_loadu_ps(x + j + 8)};
      exp2_half_shifted<2>(v, lo, magic);
      _mm256_storeu_ps(x + j, v[0]);
      _mm256_storeu_ps(x + j + 8, v[1]);
      acc0 = _mm256_add_ps(acc0, v[0]);
      acc1 = _mm256_add_ps(acc1, v[1]);
    }
    for (; j < n; j += 8) {
      const __m256i lanes = j + 8 <= n ? _mm256_set1_epi32(-1) : tail_lanes(n - j);
      __m256 v = _mm256_maskload_ps(x + j, lanes);
      exp2_half_shifted<1>(&v, lo, magic);
      v = _mm256_and_ps(v, _mm256_castsi256_ps(lanes));
      if (j + 8 <= n) {
        _mm256_storeu_ps(x + j, v);
      } else {
        store_tail(x + j, v, n - j);
      }
      acc0 = _mm256_add_ps(acc0, v);
    }
    return 1.0f / hsum256(_mm256_add_ps(acc0, acc1));
  }
#endif
  return softmax2_numerator(x, n, nullptr, 0, n, &m);
}

// sum_a v[a] * tanh(x[a] + y[a]) (Bahdanau's additive score). tanh(t) = (e - 1) / (e + 1) with
// e = 2^(2t log2 e) from the exp2 above, saturated to +-1 for |t| > 9 where float tanh is +-1
// anyway; absolute error ~1e-7 (small |t| loses relative, not absolute, accuracy).
inline float additive_score(const float* x, const float* y, const float* v, std::int64_t n) {
  std::int64_t a = 0;
  float s = 0.0f;
#if CVATTN_DETAIL_AVX2
  const __m256 two_log2e = _mm256_set1_ps(2.0f * kLog2e), half = _mm256_set1_ps(0.5f);
  const __m256 one = _mm256_set1_ps(1.0f), lim = _mm256_set1_ps(9.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 acc = _mm256_setzero_ps();
  for (; a < n; a += 8) {
    const __m256i lanes = a + 8 <= n ? _mm256_set1_epi32(-1) : tail_lanes(n - a);
    const __m256 t = _mm256_add_ps(_mm256_maskload_ps(x + a, lanes), _mm256_maskload_ps(y + a, lanes));
    // tanh is odd: evaluate on -|t| (e <= 1, no overflow) and restore the sign.
    const __m256 neg = _mm256_or_ps(t, sign);
    __m256 e = _mm256_fmsub_ps(_mm256_max_ps(neg, _mm256_sub_ps(_mm256_setzero_ps(), lim)),
                               two_log2e, half);
    exp2_half_shifted<1>(&e);
    const __m256 th = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));  // tanh|t|
    const __m256 r = _mm256_or_ps(th, _mm256_and_ps(t, sign));
    acc = _mm256_fmadd_ps(_mm256_maskload_ps(v + a, lanes), r, acc);
  }
  s = hsum256(acc);
#else
  for (; a < n; ++a) s += v[a] * std::tanh(x[a] + y[a]);
#endif
  return s;
}

// Maximum of x[0..n) (-inf when n == 0); NaN entries may or may not be ignored.
inline float row_max(const float* x, std::int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  std::int64_t j = 0;
#if CVATTN_DETAIL_AVX2
  __m256 v0 = _mm256_set1_ps(m), v1 = v0;
  for (; j + 16 <= n; j += 16) {
    v0 = _mm256_max_ps(v0, _mm256_loadu_ps(x + j));
    v1 = _mm256_max_ps(v1, _mm256_loadu_ps(x + j + 8));
  }
  m = hmax256(_mm256_max_ps(v0, v1));
#endif
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

inline void scale_row(float* x, std::int64_t n, float a) {
  for (std::int64_t j = 0; j < n; ++j) x[j] *= a;
}

// dst[0..n) = x[0..n) * a, in full 256-bit vectors (GCC's tuning for some AMD cores would
// otherwise auto-vectorise this with 128-bit ones).
inline void scale_into(const float* x, std::int64_t n, float a, float* dst) {
  std::int64_t j = 0;
#if CVATTN_DETAIL_AVX2
  const __m256 va = _mm256_set1_ps(a);
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(dst + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), va));
  if (j < n) {
    const __m256i lanes = tail_lanes(n - j);
    store_tail(dst + j, _mm256_mul_ps(_mm256_maskload_ps(x + j, lanes), va), n - j);
    return;
  }
#endif
  for (; j < n; ++j) dst[j] = x[j] * a;
}

// dst[0..n) += x[0..n) * a.
inline void scale_add_into(const float* x, std::int64_t n, float a, float* dst) {
  std::int64_t j = 0;
#if CVATTN_DETAIL_AVX2
  const __m256 va = _mm256_set1_ps(a);
  for (; j + 8 <= n; j += 8) {
    const __m256 d = _mm256_loadu_ps(dst + j);
    _mm256_storeu_ps(dst + j, _mm256_fmadd_ps(_mm256_loadu_ps(x + j), va, d));
  }
#endif
  for (; j < n; ++j) dst[j] += x[j] * a;
}

inline void zero_row(float* x, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) x[j] = 0.0f;
}

// In-place softmax of x*scale + mask over x[0..n), entries j >= allowed masked out; for callers
// whose scores are not pre-scaled.
inline void softmax_row(float* x, std::int64_t n, float scale, const float* mask,
                        std::int64_t mask_step, std::int64_t allowed) {
  const std::int64_t a = allowed < n ? allowed : n;
  scale_row(x, a, scale * kLog2e);
  const float inv = softmax2_numerator(x, n, mask, mask_step, a);
  if (inv != 0.0f) scale_row(x, a, inv);
}

}  // namespace cvattn::detail
