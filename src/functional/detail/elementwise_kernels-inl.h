// Per-target bodies of functional/detail/elementwise_kernels.hpp, compiled once for every Highway
// target by elementwise_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_ELEMENTWISE_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_ELEMENTWISE_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_ELEMENTWISE_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_ELEMENTWISE_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "functional/detail/elementwise_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <BinaryOp kOp>
HWY_INLINE float ScalarOp(float a, float b) {
  if constexpr (kOp == BinaryOp::add) return a + b;
  if constexpr (kOp == BinaryOp::sub) return a - b;
  if constexpr (kOp == BinaryOp::mul) return a * b;
  return a / b;
}

template <BinaryOp kOp, class V>
HWY_INLINE V VectorOp(V a, V b) {
  if constexpr (kOp == BinaryOp::add) return hn::Add(a, b);
  if constexpr (kOp == BinaryOp::sub) return hn::Sub(a, b);
  if constexpr (kOp == BinaryOp::mul) return hn::Mul(a, b);
  return hn::Div(a, b);
}

// The row with a and b each strided 1 (kA, kB) or a broadcast scalar, read once
// before the loop (out may alias the operands, so the compiler would reload it after every
// store); two vectors a step, the tail in scalar code (the same IEEE operation, so the same
// result).
template <BinaryOp kOp, bool kA, bool kB>
void BinaryLoop(const float* a, const float* b, float* out, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const float a0 = a[0], b0 = b[0];
  const auto va = hn::Set(d, a0), vb = hn::Set(d, b0);
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto x0 = kA ? hn::LoadU(d, a + i) : va, x1 = kA ? hn::LoadU(d, a + i + lanes) : va;
    const auto y0 = kB ? hn::LoadU(d, b + i) : vb, y1 = kB ? hn::LoadU(d, b + i + lanes) : vb;
    hn::StoreU(VectorOp<kOp>(x0, y0), d, out + i);
    hn::StoreU(VectorOp<kOp>(x1, y1), d, out + i + lanes);
  }
  for (; i < n; ++i) out[i] = ScalarOp<kOp>(kA ? a[i] : a0, kB ? b[i] : b0);
}

template <BinaryOp kOp>
void BinaryRowOp(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* out,
                 std::int64_t n) {
  if (sa == 1 && sb == 1) {
    BinaryLoop<kOp, true, true>(a, b, out, n);
  } else if (sa == 1) {
    BinaryLoop<kOp, true, false>(a, b, out, n);
  } else if (sb == 1) {
    BinaryLoop<kOp, false, true>(a, b, out, n);
  } else {  // a fill, by this target's stores (std::fill would be the baseline's)
    BinaryLoop<kOp, false, false>(a, b, out, n);
  }
}

template <BinaryOp kOp>
void BinaryRowsOp(const float* a, const std::int64_t* a_off, std::int64_t sa, const float* b,
                  const std::int64_t* b_off, std::int64_t sb, float* out, std::int64_t n,
                  std::int64_t rows) {
  for (std::int64_t r = 0; r < rows; ++r) {
    BinaryRowOp<kOp>(a + a_off[r], sa, b + b_off[r], sb, out + r * n, n);
  }
}

void BinaryRowsKernel(BinaryOp op, const float* a, const std::int64_t* a_off, std::int64_t sa,
                      const float* b, const std::int64_t* b_off, std::int64_t sb, float* out,
                      std::int64_t n, std::int64_t rows) {
  switch (op) {
    case BinaryOp::add:
      return BinaryRowsOp<BinaryOp::add>(a, a_off, sa, b, b_off, sb, out, n, rows);
    case BinaryOp::sub:
      return BinaryRowsOp<BinaryOp::sub>(a, a_off, sa, b, b_off, sb, out, n, rows);
    case BinaryOp::mul:
      return BinaryRowsOp<BinaryOp::mul>(a, a_off, sa, b, b_off, sb, out, n, rows);
    case BinaryOp::div:
      return BinaryRowsOp<BinaryOp::div>(a, a_off, sa, b, b_off, sb, out, n, rows);
  }
}

// kVecs vectors of columns from c: their float sums over each block of rows, added to acc.
template <std::int64_t kVecs>
HWY_INLINE void ColumnGroup(const float* HWY_RESTRICT base, std::int64_t stride, std::int64_t rows,
                            std::int64_t c, double* HWY_RESTRICT acc) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  HWY_ALIGN float part[kVecs * HWY_MAX_BYTES / sizeof(float)];
  for (std::int64_t k0 = 0; k0 < rows; k0 += kColumnRowBlock) {
    const std::int64_t k1 = std::min(rows, k0 + kColumnRowBlock);
    hn::Vec<decltype(d)> s[kVecs];
    for (std::int64_t v = 0; v < kVecs; ++v) s[v] = hn::Zero(d);
    for (std::int64_t k = k0; k < k1; ++k) {
      const float* row = base + k * stride + c;
      for (std::int64_t v = 0; v < kVecs; ++v) s[v] = hn::Add(s[v], hn::LoadU(d, row + v * lanes));
    }
    for (std::int64_t v = 0; v < kVecs; ++v) hn::Store(s[v], d, part + v * lanes);
    for (std::int64_t j = 0; j < kVecs * lanes; ++j) acc[c + j] += static_cast<double>(part[j]);
  }
}

void FillRowsKernel(float* HWY_RESTRICT out, std::int64_t rows, std::int64_t cols,
                    std::int64_t stride, const float* HWY_RESTRICT values) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t r = 0; r < rows; ++r) {
    float* HWY_RESTRICT o = out + r * stride;
    const float v = values != nullptr ? values[r] : 0.0f;
    const auto vv = hn::Set(d, v);
    std::int64_t j = 0;
    for (; j + lanes <= cols; j += lanes) hn::StoreU(vv, d, o + j);
    for (; j < cols; ++j) o[j] = v;
  }
}

void WeightedSumRows(const float* HWY_RESTRICT rows, std::int64_t k, std::int64_t stride,
                     const float* HWY_RESTRICT weights, float* HWY_RESTRICT out, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  // Four vectors at a time: the loads of K rows in flight, one store per vector of out.
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (std::int64_t j = 0; j < k; ++j) {
      const float* HWY_RESTRICT r = rows + j * stride + i;
      const auto w = hn::Set(d, weights[j]);
      a0 = hn::Add(a0, hn::Mul(w, hn::LoadU(d, r)));
      a1 = hn::Add(a1, hn::Mul(w, hn::LoadU(d, r + lanes)));
      a2 = hn::Add(a2, hn::Mul(w, hn::LoadU(d, r + 2 * lanes)));
      a3 = hn::Add(a3, hn::Mul(w, hn::LoadU(d, r + 3 * lanes)));
    }
    hn::StoreU(a0, d, out + i);
    hn::StoreU(a1, d, out + i + lanes);
    hn::StoreU(a2, d, out + i + 2 * lanes);
    hn::StoreU(a3, d, out + i + 3 * lanes);
  }
  for (; i + lanes <= n; i += lanes) {
    auto a = hn::Zero(d);
    for (std::int64_t j = 0; j < k; ++j) {
      a = hn::Add(a, hn::Mul(hn::Set(d, weights[j]), hn::LoadU(d, rows + j * stride + i)));
    }
    hn::StoreU(a, d, out + i);
  }
  for (; i < n; ++i) {
    float a = 0.0f;
    for (std::int64_t j = 0; j < k; ++j) {
      const float p = weights[j] * rows[j * stride + i];
      a = a + p;
    }
    out[i] = a;
  }
}

void ColumnSumsKernel(const float* HWY_RESTRICT base, std::int64_t stride, std::int64_t rows,
                      std::int64_t n, double* HWY_RESTRICT acc) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t c = 0;
  for (; c + 8 * lanes <= n; c += 8 * lanes) ColumnGroup<8>(base, stride, rows, c, acc);
  for (; c + lanes <= n; c += lanes) ColumnGroup<1>(base, stride, rows, c, acc);
  for (; c < n; ++c) {
    for (std::int64_t k0 = 0; k0 < rows; k0 += kColumnRowBlock) {
      float part = 0.0f;
      for (std::int64_t k = k0; k < std::min(rows, k0 + kColumnRowBlock); ++k) {
        part += base[k * stride + c];
      }
      acc[c] += static_cast<double>(part);
    }
  }
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle
