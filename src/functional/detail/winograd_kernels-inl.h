// Per-target bodies of functional/detail/winograd_kernels.hpp, compiled once for every Highway
// target by winograd_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_WINOGRAD_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_WINOGRAD_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_WINOGRAD_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_WINOGRAD_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "functional/detail/winograd_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using WinogradTag = hn::CappedTag<float, static_cast<std::size_t>(kWinogradLanes)>;

// B^T of F(4x4, 3x3) on six values (one column or row of a 6x6 input tile):
//   [1, -3/2, -2, 3/2, 1, 0], [0, -1, 1/2, 5/2, 1, 0], [0, 1, -5/2, 1/2, 1, 0],
//   [0, -2, -1, 2, 1, 0], [0, 1/2, -1, -1/2, 1, 0], [0, 1, -3/2, -2, 3/2, 1].
// The reference twin groups the sums the same way.
template <class D, class V>
HWY_INLINE void InputRows(D d, V d0, V d1, V d2, V d3, V d4, V d5, V& t0, V& t1, V& t2, V& t3,
                          V& t4, V& t5) {
  const V half = hn::Set(d, 0.5f), one_half = hn::Set(d, 1.5f), two = hn::Set(d, 2.0f),
          five_halves = hn::Set(d, 2.5f);
  const V d4_d2 = hn::Sub(d4, d2);
  t0 = hn::MulAdd(one_half, hn::Sub(d3, d1), hn::NegMulAdd(two, d2, hn::Add(d0, d4)));
  t1 = hn::MulAdd(five_halves, d3, hn::MulAdd(half, d2, hn::Sub(d4, d1)));
  t2 = hn::MulAdd(half, d3, hn::NegMulAdd(five_halves, d2, hn::Add(d4, d1)));
  t3 = hn::MulAdd(two, hn::Sub(d3, d1), d4_d2);
  t4 = hn::MulAdd(half, hn::Sub(d1, d3), d4_d2);
  t5 = hn::MulAdd(one_half, d4_d2, hn::NegMulAdd(two, d3, hn::Add(d5, d1)));
}

// A^T of F(4x4, 3x3) on six values: [1, 1, 1, 1, 1, 0], [0, 1, -1, 1/2, -2, 0],
// [0, 1, 1, 1/4, 4, 0], [0, 1, -1, 1/8, -8, 1].
template <class D, class V>
HWY_INLINE void OutputRows(D d, V m0, V m1, V m2, V m3, V m4, V m5, V& y0, V& y1, V& y2, V& y3) {
  const V p = hn::Add(m1, m2), q = hn::Sub(m1, m2);
  y0 = hn::Add(hn::Add(m0, p), hn::Add(m3, m4));
  y1 = hn::MulAdd(hn::Set(d, 0.5f), m3, hn::NegMulAdd(hn::Set(d, 2.0f), m4, q));
  y2 = hn::MulAdd(hn::Set(d, 0.25f), m3, hn::MulAdd(hn::Set(d, 4.0f), m4, p));
  y3 = hn::MulAdd(hn::Set(d, 0.125f), m3, hn::NegMulAdd(hn::Set(d, 8.0f), m4, hn::Add(q, m5)));
}

// G on three values (one column or row of a 3x3 kernel), grouped so that only the sums round
// before the one multiply by 1/3, -4/15 or 1/15 (4a, 2b and 4c are exact). The reference twin
// groups them the same way, with no fused multiply-add, so every target gives the same bits.
// put(i, row i) receives the six results (no array of vectors: SVE's are sizeless).
template <class D, class V, class Put>
HWY_INLINE void WeightRows(D d, V a, V b, V c, const Put& put) {
  const V ac = hn::Add(a, c), two_b = hn::Add(b, b), four = hn::Set(d, 4.0f);
  put(0, a);
  put(1, hn::Mul(hn::Add(ac, b), hn::Set(d, 1.0f / 3)));
  put(2, hn::Mul(hn::Sub(b, ac), hn::Set(d, 1.0f / 3)));
  put(3, hn::Mul(hn::Add(hn::MulAdd(four, a, c), two_b), hn::Set(d, -4.0f / 15)));
  put(4, hn::Mul(hn::Sub(hn::MulAdd(four, c, a), two_b), hn::Set(d, 1.0f / 15)));
  put(5, c);
}

void Winograd43Input(const float* const* rows, std::int64_t tw, float* HWY_RESTRICT t,
                     float* HWY_RESTRICT v, std::int64_t step) {
  const WinogradTag d;
  using V = hn::Vec<WinogradTag>;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t len = winograd43_row_floats(tw);
  const std::int64_t blocks = (tw + L - 1) / L;
  // Along y over whole rows (contiguous): every column the interleaved loads below read, up to
  // 4 blocks L + 3 (whole vectors: L divides 4 or 4 divides L).
  const std::int64_t cols = 4 * blocks * L + std::max<std::int64_t>(L, 4);
  float* HWY_RESTRICT tr[6];
  for (int i = 0; i < 6; ++i) tr[i] = t + i * len;
  for (std::int64_t k = 0; k < cols; k += L) {
    V t0, t1, t2, t3, t4, t5;
    InputRows(d, hn::LoadU(d, rows[0] + k), hn::LoadU(d, rows[1] + k), hn::LoadU(d, rows[2] + k),
              hn::LoadU(d, rows[3] + k), hn::LoadU(d, rows[4] + k), hn::LoadU(d, rows[5] + k), t0,
              t1, t2, t3, t4, t5);
    hn::StoreU(t0, d, tr[0] + k);
    hn::StoreU(t1, d, tr[1] + k);
    hn::StoreU(t2, d, tr[2] + k);
    hn::StoreU(t3, d, tr[3] + k);
    hn::StoreU(t4, d, tr[4] + k);
    hn::StoreU(t5, d, tr[5] + k);
  }
  // Along x, L tiles at a time: columns 4 tx + j, j < 4 from one interleaved load, j = 4, 5 as
  // columns 0, 1 of the next tiles: those vectors moved down one lane, the next block's first
  // tile's in the last lane. (A second interleaved load 4 floats further would straddle the
  // stores just made above, and wait for them to reach the cache: 40 % of this kernel on Sapphire
  // Rapids-class Xeons, docs/performance.md.) The last vector may run past tw (see the header).
  const hn::RebindToSigned<WinogradTag> di;
  HWY_ALIGN std::int32_t next_lane[kWinogradLanes] = {};
  for (std::int64_t l = 0; l < L; ++l)
    next_lane[l] = static_cast<std::int32_t>(std::min(l + 1, L - 1));
  const auto down = hn::SetTableIndices(d, next_lane);
  const auto last =
      hn::RebindMask(d, hn::Eq(hn::Iota(di, 0), hn::Set(di, static_cast<std::int32_t>(L - 1))));
  for (int i = 0; i < 6; ++i) {
    float* HWY_RESTRICT out = v + 6 * i * step;
    for (std::int64_t tx = 0; tx < tw; tx += L) {
      V c0, c1, c2, c3;
      hn::LoadInterleaved4(d, tr[i] + 4 * tx, c0, c1, c2, c3);
      const float* next = tr[i] + 4 * (tx + L);
      const V c4 = hn::IfThenElse(last, hn::Set(d, next[0]), hn::TableLookupLanes(c0, down));
      const V c5 = hn::IfThenElse(last, hn::Set(d, next[1]), hn::TableLookupLanes(c1, down));
      V o0, o1, o2, o3, o4, o5;
      InputRows(d, c0, c1, c2, c3, c4, c5, o0, o1, o2, o3, o4, o5);
      hn::StoreU(o0, d, out + tx);
      hn::StoreU(o1, d, out + step + tx);
      hn::StoreU(o2, d, out + 2 * step + tx);
      hn::StoreU(o3, d, out + 3 * step + tx);
      hn::StoreU(o4, d, out + 4 * step + tx);
      hn::StoreU(o5, d, out + 5 * step + tx);
    }
  }
}

void Winograd43Output(const float* HWY_RESTRICT m, std::int64_t step, std::int64_t tw, float bias,
                      float* HWY_RESTRICT out, std::int64_t ld, std::int64_t rows,
                      std::int64_t wo) {
  const WinogradTag d;
  using V = hn::Vec<WinogradTag>;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const V b = hn::Set(d, bias);
  HWY_ALIGN float s[24 * kWinogradLanes];   // A^T M: row k, column j at (6 k + j) L
  HWY_ALIGN float row[4 * kWinogradLanes];  // a row of the tiles that end past wo
  for (std::int64_t tx = 0; tx < tw; tx += L) {
    const float* src = m + tx;
    for (std::int64_t j = 0; j < 6; ++j) {  // along y, column j of the tiles
      V y0, y1, y2, y3;
      OutputRows(d, hn::LoadU(d, src + j * step), hn::LoadU(d, src + (6 + j) * step),
                 hn::LoadU(d, src + (12 + j) * step), hn::LoadU(d, src + (18 + j) * step),
                 hn::LoadU(d, src + (24 + j) * step), hn::LoadU(d, src + (30 + j) * step), y0, y1,
                 y2, y3);
      hn::Store(y0, d, s + j * L);
      hn::Store(y1, d, s + (6 + j) * L);
      hn::Store(y2, d, s + (12 + j) * L);
      hn::Store(y3, d, s + (18 + j) * L);
    }
    const std::int64_t valid = wo - 4 * tx;    // output columns of these tiles
    for (std::int64_t k = 0; k < rows; ++k) {  // along x, output row k of the tiles
      const float* r = s + 6 * k * L;
      V y0, y1, y2, y3;
      OutputRows(d, hn::Load(d, r), hn::Load(d, r + L), hn::Load(d, r + 2 * L),
                 hn::Load(d, r + 3 * L), hn::Load(d, r + 4 * L), hn::Load(d, r + 5 * L), y0, y1, y2,
                 y3);
      float* dst = out + k * ld + 4 * tx;
      if (valid >= 4 * L) {
        hn::StoreInterleaved4(hn::Add(y0, b), hn::Add(y1, b), hn::Add(y2, b), hn::Add(y3, b), d,
                              dst);
        continue;
      }
      // Only `valid` columns: the rest belong to the next row, maybe another task's.
      hn::StoreInterleaved4(hn::Add(y0, b), hn::Add(y1, b), hn::Add(y2, b), hn::Add(y3, b), d, row);
      for (std::int64_t q = 0; q < valid; q += L) {
        const V part = hn::Load(d, row + q);
        if (valid - q >= L) {
          hn::StoreU(part, d, dst + q);
        } else {
          hn::BlendedStore(part, hn::FirstN(d, static_cast<std::size_t>(valid - q)), d, dst + q);
        }
      }
    }
  }
}

// Copies columns [i, cols) of one row L floats at a time while L fit, folding max |x| (infinity
// for NaN or infinity) into top; returns the first column not copied.
template <class D>
HWY_INLINE std::int64_t CopyBounded(D d, const float* HWY_RESTRICT s, float* HWY_RESTRICT o,
                                    std::int64_t i, std::int64_t cols, hn::Vec<D>& top) {
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const hn::Vec<D> inf = hn::Set(d, std::numeric_limits<float>::infinity());
  for (; i + L <= cols; i += L) {
    const hn::Vec<D> x = hn::LoadU(d, s + i);
    hn::StoreU(x, d, o + i);
    top = hn::Max(top, hn::IfThenElse(hn::IsFinite(x), hn::Abs(x), inf));
  }
  return i;
}

float WinogradCopyRows(const float* HWY_RESTRICT src, std::int64_t src_ld, std::int64_t rows,
                       std::int64_t cols, float* HWY_RESTRICT dst, std::int64_t dst_ld) {
  // A row's tail in 8 and then 4 lanes before single floats: 56 columns are 16 + 16 + 16 + 8 on
  // AVX-512, where a scalar tail of 8 took half of this kernel's time.
  const WinogradTag d;
  const hn::CappedTag<float, 8> d8;
  const hn::CappedTag<float, 4> d4;
  hn::Vec<decltype(d)> top = hn::Zero(d);
  hn::Vec<decltype(d8)> top8 = hn::Zero(d8);
  hn::Vec<decltype(d4)> top4 = hn::Zero(d4);
  float tail = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * src_ld;
    float* o = dst + r * dst_ld;
    std::int64_t i = CopyBounded(d, s, o, 0, cols, top);
    i = CopyBounded(d8, s, o, i, cols, top8);
    i = CopyBounded(d4, s, o, i, cols, top4);
    for (; i < cols; ++i) {
      o[i] = s[i];
      tail = std::max(
          tail, std::isfinite(s[i]) ? std::fabs(s[i]) : std::numeric_limits<float>::infinity());
    }
  }
  const float wide = hn::GetLane(hn::MaxOfLanes(d, top));
  const float mid =
      std::max(hn::GetLane(hn::MaxOfLanes(d8, top8)), hn::GetLane(hn::MaxOfLanes(d4, top4)));
  return std::max(std::max(tail, wide), mid);
}

// A vector of kernels at a time: their nine taps transposed through the stack (kernels are 9
// floats apart), G along the kernel's columns into the stack, then along the rows into u.
void Winograd43Weights(const float* HWY_RESTRICT k, std::int64_t count, float* HWY_RESTRICT u,
                       std::int64_t plane) {
  const WinogradTag d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  HWY_ALIGN float taps[9][kWinogradLanes];
  HWY_ALIGN float gk[6][3][kWinogradLanes];  // G along y: gk[i][j] = (G k)[i][j]
  HWY_ALIGN float part[kWinogradLanes];
  for (std::int64_t c0 = 0; c0 < count; c0 += L) {
    const std::int64_t n = std::min(L, count - c0);
    for (std::int64_t c = 0; c < L; ++c) {
      for (int a = 0; a < 9; ++a) taps[a][c] = c < n ? k[(c0 + c) * 9 + a] : 0.0f;
    }
    for (int j = 0; j < 3; ++j) {
      WeightRows(d, hn::Load(d, taps[j]), hn::Load(d, taps[3 + j]), hn::Load(d, taps[6 + j]),
                 [&](int i, auto v) { hn::Store(v, d, gk[i][j]); });
    }
    for (int i = 0; i < 6; ++i) {
      WeightRows(d, hn::Load(d, gk[i][0]), hn::Load(d, gk[i][1]), hn::Load(d, gk[i][2]),
                 [&](int j, auto v) {
                   float* o = u + (6 * i + j) * plane + c0;
                   if (n == L) {
                     hn::StoreU(v, d, o);
                   } else {
                     hn::Store(v, d, part);
                     std::copy(part, part + n, o);
                   }
                 });
    }
  }
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
