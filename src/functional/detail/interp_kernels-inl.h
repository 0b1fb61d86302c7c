// Per-target bodies of functional/detail/interp_kernels.hpp, compiled once for every Highway
// target by interp_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_INTERP_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "functional/detail/interp_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::functional::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Along H: o[x] = ((w[0] * t[0][x] + w[1] * t[1][x]) + ...) over K rows.
template <int K>
HWY_INLINE void BlendRows(const float* const* t, const float* HWY_RESTRICT w, std::int64_t n,
                          float* HWY_RESTRICT o) {
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const float* HWY_RESTRICT t0 = t[0];
  const float* HWY_RESTRICT t1 = t[1];
  const auto w0 = hn::Set(d, w[0]), w1 = hn::Set(d, w[1]);
  std::int64_t x = 0;
  if constexpr (K == 2) {
    for (; x + L <= n; x += L) {
      const auto a = hn::Mul(w0, hn::LoadU(d, t0 + x));
      hn::StoreU(hn::Add(a, hn::Mul(w1, hn::LoadU(d, t1 + x))), d, o + x);
    }
    for (; x < n; ++x) o[x] = w[0] * t0[x] + w[1] * t1[x];
    return;
  }
  const float* HWY_RESTRICT t2 = t[2];
  const float* HWY_RESTRICT t3 = t[3];
  const auto w2 = hn::Set(d, w[2]), w3 = hn::Set(d, w[3]);
  for (; x + L <= n; x += L) {
    auto a = hn::Mul(w0, hn::LoadU(d, t0 + x));
    a = hn::Add(a, hn::Mul(w1, hn::LoadU(d, t1 + x)));
    a = hn::Add(a, hn::Mul(w2, hn::LoadU(d, t2 + x)));
    hn::StoreU(hn::Add(a, hn::Mul(w3, hn::LoadU(d, t3 + x))), d, o + x);
  }
  for (; x < n; ++x) o[x] = w[0] * t0[x] + w[1] * t1[x] + w[2] * t2[x] + w[3] * t3[x];
}

// K taps of output x read in turn from `row`, summed in tap order (the reference's loop); one tap
// (nearest) is a copy, without its weight.
template <int K>
HWY_INLINE float GatherOne(const float* HWY_RESTRICT row, const std::int32_t* const* idx,
                           const float* const* wt, std::int64_t x) {
  if constexpr (K == 1) return row[idx[0][x]];
  float a = wt[0][x] * row[idx[0][x]];
  for (int j = 1; j < K; ++j) a = a + wt[j][x] * row[idx[j][x]];
  return a;
}

template <int K>
void GatherRowK(const float* HWY_RESTRICT row, std::int64_t w, const std::int32_t* const* idx,
                const float* const* wt, std::int64_t n, float* HWY_RESTRICT t) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  // The plain loop where vectors are narrower than 8 lanes (SSE4: the permutations lost to it,
  // 7.2 against 6.4 ms bilinear, docs/performance.md) and where the first vector of outputs
  // already spans more than two vectors of input (downsampling past half: every vector would).
  if (L < 8 || n < L || idx[K - 1][L - 1] - idx[0][0] >= 2 * L) {
    for (std::int64_t x = 0; x < n; ++x) t[x] = GatherOne<K>(row, idx, wt, x);
    return;
  }
  // A row shorter than two vectors is read from a zero-padded copy, so that the window loads
  // below stay inside it.
  HWY_ALIGN float pad[2 * HWY_MAX_BYTES / sizeof(float)];
  if (w < 2 * L) {
    std::memcpy(pad, row, static_cast<std::size_t>(w) * sizeof(float));
    std::fill(pad + w, pad + 2 * L, 0.0f);
    row = pad;
    w = 2 * L;
  }
  const auto lanes = hn::Set(di, static_cast<std::int32_t>(L));
  const auto last = hn::Set(di, static_cast<std::int32_t>(L - 1));
  std::int64_t x = 0;
  // Output x from its K taps, tap(j) giving the values of tap j for the L outputs at x.
  auto sum = [&](auto&& tap) {
    if constexpr (K == 1) {
      hn::StoreU(tap(0), d, t + x);
      return;
    }
    auto a = hn::Mul(hn::LoadU(d, wt[0] + x), tap(0));
    for (int j = 1; j < K; ++j) a = hn::MulAdd(hn::LoadU(d, wt[j] + x), tap(j), a);
    hn::StoreU(a, d, t + x);
  };
  for (; x + L <= n; x += L) {
    // The taps of these L outputs lie in [lo, hi] (indices rise with x and with the tap). When
    // that span fits one vector (upsampling), one load holds them all and each tap is a lane
    // permutation of it; when it fits two (down to half the size), a permutation of each and a
    // select; wider spans take the scalar loop.
    const std::int64_t lo = idx[0][x], hi = idx[K - 1][x + L - 1];
    const std::int64_t base1 = std::min(lo, w - L), base2 = std::min(lo, w - 2 * L);
    if (hi - base1 < L) {
      const auto window = hn::LoadU(d, row + base1);
      const auto shift = hn::Set(di, static_cast<std::int32_t>(base1));
      sum([&](int j) {
        const auto local = hn::Sub(hn::LoadU(di, idx[j] + x), shift);
        return hn::TableLookupLanes(window, hn::IndicesFromVec(d, local));
      });
    } else if (hi - base2 < 2 * L) {
      const auto low = hn::LoadU(d, row + base2), high = hn::LoadU(d, row + base2 + L);
      const auto shift = hn::Set(di, static_cast<std::int32_t>(base2));
      sum([&](int j) {
        const auto local = hn::Sub(hn::LoadU(di, idx[j] + x), shift);
        const auto a = hn::TableLookupLanes(low, hn::IndicesFromVec(d, hn::Min(local, last)));
        const auto up = hn::Max(hn::Sub(local, lanes), hn::Zero(di));
        const auto b = hn::TableLookupLanes(high, hn::IndicesFromVec(d, up));
        return hn::IfThenElse(hn::RebindMask(d, hn::Gt(local, last)), b, a);
      });
    } else {
      for (std::int64_t i = x; i < x + L; ++i) t[i] = GatherOne<K>(row, idx, wt, i);
    }
  }
  for (; x < n; ++x) t[x] = GatherOne<K>(row, idx, wt, x);
}

// The two passes of one plane, K taps along each axis.
template <int K>
void PlaneK(const float* HWY_RESTRICT in, std::int64_t h, std::int64_t w, const InterpAxis& tx,
            const InterpAxis& ty, const unsigned char* used, float* HWY_RESTRICT tmp,
            float* HWY_RESTRICT out) {
  const std::int64_t ow = tx.n;
  const std::int32_t* ix[K];
  const float* wx[K];
  for (int j = 0; j < K; ++j) {
    ix[j] = tx.index + j * ow;
    wx[j] = tx.weight + j * ow;
  }
  for (std::int64_t r = 0; r < h; ++r) {
    if (used[r]) GatherRowK<K>(in + r * w, w, ix, wx, ow, tmp + r * ow);
  }
  for (std::int64_t o = 0; o < ty.n; ++o) {
    const float* rows[K];
    float wy[K];
    for (int j = 0; j < K; ++j) {
      rows[j] = tmp + std::int64_t{ty.index[j * ty.n + o]} * ow;
      wy[j] = ty.weight[j * ty.n + o];
    }
    BlendRows<K>(rows, wy, ow, out + o * ow);
  }
}

// Nearest upsampling by exactly 2 along W (output x reads input x / 2): each input twice, two
// permutations (whole-vector interleaves where a vector is one 128-bit block) per vector of input,
// with constant indices. The general path would reload and shift indices for every vector; it
// measured 6 % slower than the plain loop it replaced on this case (docs/performance.md).
HWY_INLINE void RepeatTwice(const float* HWY_RESTRICT row, std::int64_t w, float* HWY_RESTRICT t) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  if (L >= 8) {
    const auto first = hn::IndicesFromVec(d, hn::ShiftRight<1>(hn::Iota(di, 0)));
    const auto second =
        hn::IndicesFromVec(d, hn::ShiftRight<1>(hn::Iota(di, static_cast<std::int32_t>(L))));
    for (; i + L <= w; i += L) {
      const auto v = hn::LoadU(d, row + i);
      hn::StoreU(hn::TableLookupLanes(v, first), d, t + 2 * i);
      hn::StoreU(hn::TableLookupLanes(v, second), d, t + 2 * i + L);
    }
  }
#if HWY_TARGET != HWY_SCALAR  // one lane: the loop below
  for (; i + L <= w; i += L) {
    const auto v = hn::LoadU(d, row + i);
    hn::StoreU(hn::InterleaveLower(d, v, v), d, t + 2 * i);
    hn::StoreU(hn::InterleaveUpper(d, v, v), d, t + 2 * i + L);
  }
#endif
  for (; i < w; ++i) t[2 * i] = t[2 * i + 1] = row[i];
}

// Whether index[x] == x >> shift for every x < n, a vector at a time: it runs once per call, and
// a scalar loop of it was 2 % of 56 -> 112 (one plane per call).
HWY_INLINE bool IndicesAre(const std::int32_t* HWY_RESTRICT index, std::int64_t n, int shift) {
  const hn::ScalableTag<std::int32_t> di;
  const auto L = static_cast<std::int64_t>(hn::Lanes(di));
  std::int64_t x = 0;
  for (; x + L <= n; x += L) {
    const auto want = hn::ShiftRightSame(hn::Iota(di, static_cast<std::int32_t>(x)), shift);
    if (!hn::AllTrue(di, hn::Eq(hn::LoadU(di, index + x), want))) return false;
  }
  for (; x < n; ++x) {
    if (index[x] != (x >> shift)) return false;
  }
  return true;
}

// Nearest, `planes` planes: each output row is its source row read along W, written straight to
// `out`; a row with the same source as the one before (upsampling) is a copy of it. Along W a copy
// where the indices are the identity, RepeatTwice where they are x / 2, else GatherRowK<1>; the
// indices are classified once per call.
void NearestPlanes(const float* HWY_RESTRICT in, std::int64_t planes, std::int64_t h,
                   std::int64_t w, const InterpAxis& tx, const InterpAxis& ty,
                   float* HWY_RESTRICT out) {
  const std::int64_t ow = tx.n, oh = ty.n;
  const std::int32_t* ix[1] = {tx.index};
  const bool same = ow == w && IndicesAre(tx.index, ow, 0);
  const bool twice = ow == 2 * w && IndicesAre(tx.index, ow, 1);
  for (std::int64_t p = 0; p < planes; ++p, in += h * w, out += oh * ow) {
    for (std::int64_t o = 0; o < oh; ++o) {
      float* row = out + o * ow;
      const bool repeat = o > 0 && ty.index[o] == ty.index[o - 1];
      const float* src = repeat ? row - ow : in + std::int64_t{ty.index[o]} * w;
      if (same || repeat) {
        std::memcpy(row, src, static_cast<std::size_t>(ow) * sizeof(float));
      } else if (twice) {
        RepeatTwice(src, w, row);
      } else {
        GatherRowK<1>(src, w, ix, nullptr, ow, row);
      }
    }
  }
}

void InterpPlanes(const float* HWY_RESTRICT in, std::int64_t planes, std::int64_t h, std::int64_t w,
                  const InterpAxis& tx, const InterpAxis& ty, const unsigned char* used,
                  float* HWY_RESTRICT tmp, float* HWY_RESTRICT out) {
  if (tx.k == 1) {
    NearestPlanes(in, planes, h, w, tx, ty, out);
    return;
  }
  for (std::int64_t p = 0; p < planes; ++p, in += h * w, out += ty.n * tx.n) {
    if (tx.k == 2) {
      PlaneK<2>(in, h, w, tx, ty, used, tmp, out);
    } else {
      PlaneK<4>(in, h, w, tx, ty, used, tmp, out);
    }
  }
}

}  // namespace cvattn::functional::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
