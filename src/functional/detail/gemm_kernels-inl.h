// Per-target bodies of functional/detail/gemm_kernels.hpp, compiled once for every Highway target
// by gemm_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_GEMM_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_GEMM_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_GEMM_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_GEMM_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "functional/detail/gemm_kernels.hpp"

#ifndef CVATTN_GEMM_UNROLL
#define CVATTN_GEMM_UNROLL _Pragma("GCC unroll 16")
#endif

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tile: kMr rows of C x kNv vectors of its columns. Per step of K, kNv loads of the
// packed B panel and kMr broadcasts of the packed A panel feed kMr * kNv FMAs: 24 accumulators
// use most of AVX-512's 32 registers and hide the FMA latency on two pipes; 12 fit AVX2's 16.
#if HWY_MAX_BYTES >= 64
constexpr int kMr = 12;
#else
constexpr int kMr = 6;
#endif
constexpr int kNv = 2;
// Rows of op(A) packed at once: kMr * 16 rows of kGemmKc floats stay in the L2 cache.
constexpr std::int64_t kMc = kMr * 16;
static_assert(kMc <= kGemmMcMax, "packing buffer bound");
static_assert(kNv * HWY_MAX_BYTES / sizeof(float) <= kGemmNrMax, "stack tile bound");

// dst[p * step + r] = src[r * ld + p] for r < rows, p < kc (rows <= step), or with kAdd
// beta * dst[p * step + r] + src[r * ld + p]: the packing of a transposed operand, and the
// transposed product's C (TransposeAdd). 4 x 4 blocks are transposed in 128-bit registers
// (4 loads, 8 shuffles, 4 stores per 16 floats); one float at a time, the copy of a 512 x 4608
// conv weight took a third of a 7x7-plane conv's time (perf, Zen 5,
// docs/performance.md#matrix-products).
template <bool kAdd>
inline void TransposeInto(const float* HWY_RESTRICT src, std::int64_t ld, std::int64_t rows,
                          std::int64_t kc, float* HWY_RESTRICT dst, std::int64_t step, float beta) {
  std::int64_t r = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::FixedTag<float, 4> d4;
  const auto vbeta = hn::Set(d4, beta);
  const auto put = [&](hn::Vec<decltype(d4)> v, float* o) {
    if constexpr (kAdd) v = hn::MulAdd(vbeta, hn::LoadU(d4, o), v);
    hn::StoreU(v, d4, o);
  };
  for (; r + 4 <= rows; r += 4) {
    const float* s = src + r * ld;
    std::int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
      const auto r0 = hn::LoadU(d4, s + p);
      const auto r1 = hn::LoadU(d4, s + ld + p);
      const auto r2 = hn::LoadU(d4, s + 2 * ld + p);
      const auto r3 = hn::LoadU(d4, s + 3 * ld + p);
      const auto t0 = hn::InterleaveLower(d4, r0, r1);  // r0[0] r1[0] r0[1] r1[1]
      const auto t1 = hn::InterleaveLower(d4, r2, r3);
      const auto t2 = hn::InterleaveUpper(d4, r0, r1);  // r0[2] r1[2] r0[3] r1[3]
      const auto t3 = hn::InterleaveUpper(d4, r2, r3);
      float* o = dst + p * step + r;
      put(hn::ConcatLowerLower(d4, t1, t0), o);
      put(hn::ConcatUpperUpper(d4, t1, t0), o + step);
      put(hn::ConcatLowerLower(d4, t3, t2), o + 2 * step);
      put(hn::ConcatUpperUpper(d4, t3, t2), o + 3 * step);
    }
    for (; p < kc; ++p) {
      for (int i = 0; i < 4; ++i) {
        float& o = dst[p * step + r + i];
        o = kAdd ? beta * o + s[i * ld + p] : s[i * ld + p];
      }
    }
  }
#endif
  for (; r < rows; ++r) {
    const float* s = src + r * ld;
    for (std::int64_t p = 0; p < kc; ++p) {
      float& o = dst[p * step + r];
      o = kAdd ? beta * o + s[p] : s[p];
    }
  }
}

inline void TransposeCopy(const float* HWY_RESTRICT src, std::int64_t ld, std::int64_t rows,
                          std::int64_t kc, float* HWY_RESTRICT dst, std::int64_t step) {
  TransposeInto<false>(src, ld, rows, kc, dst, step, 0.0f);
}

// dst[q] = src[q] for q < n and 0 for n <= q < width, in whole vectors, then 8, 4, 2 and 1
// floats. A memcpy of a variable size is inlined as `rep movsq` under generic tuning: on the
// 16-column edge panels of a lambda layer's products its start-up took 17 % of the packed
// product in the portable build (perf, Zen 5, docs/performance.md#matrix-products).
inline void CopyPadRow(const float* HWY_RESTRICT src, std::int64_t n, std::int64_t width,
                       float* HWY_RESTRICT dst) {
  std::int64_t q = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> d;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  for (; q + L <= n; q += L) hn::StoreU(hn::LoadU(d, src + q), d, dst + q);
#if HWY_MAX_BYTES >= 32
  const hn::FixedTag<float, 8> d8;
  if (q + 8 <= n) {
    hn::StoreU(hn::LoadU(d8, src + q), d8, dst + q);
    q += 8;
  }
#endif
  const hn::FixedTag<float, 4> d4;
  for (; q + 4 <= n; q += 4) hn::StoreU(hn::LoadU(d4, src + q), d4, dst + q);
#endif
  for (; q + 2 <= n; q += 2) {  // at most once below a vector target's 4 lanes
    dst[q] = src[q];
    dst[q + 1] = src[q + 1];
  }
  if (q < n) {
    dst[q] = src[q];
    ++q;
  }
#if HWY_TARGET != HWY_SCALAR
  for (; q + L <= width; q += L) hn::StoreU(hn::Zero(d), d, dst + q);
#if HWY_MAX_BYTES >= 32
  if (q + 8 <= width) {
    hn::StoreU(hn::Zero(d8), d8, dst + q);
    q += 8;
  }
#endif
  for (; q + 4 <= width; q += 4) hn::StoreU(hn::Zero(d4), d4, dst + q);
#endif
  for (; q < width; ++q) dst[q] = 0.0f;
}

// pa[p * kMr + r] = op(A)(i0 + r, p0 + p) for r < rows, 0 for rows <= r < kMr.
inline void PackA(Trans ta, const float* HWY_RESTRICT a, std::int64_t lda, std::int64_t i0,
                  std::int64_t rows, std::int64_t p0, std::int64_t kc, float* HWY_RESTRICT pa) {
  if (ta == Trans::no) {
    if (rows < kMr) std::fill(pa, pa + kc * kMr, 0.0f);
    TransposeCopy(a + i0 * lda + p0, lda, rows, kc, pa, kMr);
  } else if (rows == kMr) {
    // A fixed count the compiler copies in registers (a memcpy of a variable size becomes
    // `rep movsq` under generic tuning, see CopyPadRow).
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* src = a + (p0 + p) * lda + i0;
      CVATTN_GEMM_UNROLL
      for (int r = 0; r < kMr; ++r) pa[p * kMr + r] = src[r];
    }
  } else {
    for (std::int64_t p = 0; p < kc; ++p)
      CopyPadRow(a + (p0 + p) * lda + i0, rows, kMr, pa + p * kMr);
  }
}

// pb[p * nr + j] = op(B)(p0 + p, j0 + j) for j < cols, 0 for cols <= j < nr.
inline void PackB(Trans tb, const float* HWY_RESTRICT b, std::int64_t ldb, std::int64_t p0,
                  std::int64_t kc, std::int64_t j0, std::int64_t cols, std::int64_t nr,
                  float* HWY_RESTRICT pb) {
  if (tb == Trans::no && cols == nr) {
    // Whole panels row by row in vectors: a memcpy of nr floats is inlined as `rep movsq` under
    // generic tuning, whose start-up cost was 8 % of a stride-2 conv (perf, Zen 5). Edge panels
    // likewise, by CopyPadRow.
    const hn::ScalableTag<float> d;
    const auto L = static_cast<std::int64_t>(hn::Lanes(d));
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* src = b + (p0 + p) * ldb + j0;
      CVATTN_GEMM_UNROLL
      for (int v = 0; v < kNv; ++v) hn::StoreU(hn::LoadU(d, src + v * L), d, pb + p * nr + v * L);
    }
  } else if (tb == Trans::no) {
    for (std::int64_t p = 0; p < kc; ++p)
      CopyPadRow(b + (p0 + p) * ldb + j0, cols, nr, pb + p * nr);
  } else {
    if (cols < nr) std::fill(pb, pb + kc * nr, 0.0f);
    TransposeCopy(b + j0 * ldb + p0, ldb, cols, kc, pb, nr);
  }
}

// R rows x V vectors of C from packed panels (R <= kMr, V <= kNv; the panels' steps stay kMr and
// nr): c = alpha * sum_p pa[p] pb[p] + beta * c, the products summed in order of p. beta == 0
// does not read c.
template <int R, int V, class D>
HWY_INLINE void MicroTile(D d, std::int64_t kc, const float* HWY_RESTRICT pa,
                          const float* HWY_RESTRICT pb, std::int64_t nr, float alpha, float beta,
                          float* HWY_RESTRICT c, std::int64_t ldc) {
  using Vec = hn::Vec<D>;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  Vec acc[R][V];
  CVATTN_GEMM_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_GEMM_UNROLL
    for (int v = 0; v < V; ++v) acc[r][v] = hn::Zero(d);
  }
  for (std::int64_t p = 0; p < kc; ++p) {
    Vec bv[V];
    CVATTN_GEMM_UNROLL
    for (int v = 0; v < V; ++v) bv[v] = hn::Load(d, pb + v * L);
    CVATTN_GEMM_UNROLL
    for (int r = 0; r < R; ++r) {
      const Vec av = hn::Set(d, pa[r]);
      CVATTN_GEMM_UNROLL
      for (int v = 0; v < V; ++v) acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
    }
    pa += kMr;
    pb += nr;
  }
  const Vec va = hn::Set(d, alpha);
  const Vec vb = hn::Set(d, beta);
  CVATTN_GEMM_UNROLL
  for (int r = 0; r < R; ++r) {
    float* row = c + r * ldc;
    CVATTN_GEMM_UNROLL
    for (int v = 0; v < V; ++v) {
      Vec out;
      if (beta == 0.0f) {
        out = hn::Mul(va, acc[r][v]);
      } else if (beta == 1.0f) {
        out = hn::MulAdd(va, acc[r][v], hn::LoadU(d, row + v * L));
      } else {
        out = hn::MulAdd(va, acc[r][v], hn::Mul(vb, hn::LoadU(d, row + v * L)));
      }
      hn::StoreU(out, d, row + v * L);
    }
  }
}

// A tile cut by the edge of C (rows < kMr or cols < nr): the smallest tile of a third of kMr
// rows times whole vectors that covers it, stored straight into C when it fits exactly, else
// computed into `tile` (nr floats a row) and its valid part combined with C.
template <class D>
HWY_INLINE void EdgeTile(D d, std::int64_t rows, std::int64_t cols, std::int64_t kc,
                         const float* HWY_RESTRICT pa, const float* HWY_RESTRICT pb,
                         std::int64_t nr, float alpha, float beta, float* HWY_RESTRICT c,
                         std::int64_t ldc, float* HWY_RESTRICT tile) {
  static_assert(kMr % 3 == 0 && kNv == 2, "the cases below");
  constexpr int kQ = kMr / 3;
  const auto L = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t thirds = (rows + kQ - 1) / kQ, vecs = (cols + L - 1) / L;
  const bool exact = rows == thirds * kQ && cols == vecs * L;
  float* out = exact ? c : tile;
  const std::int64_t ldo = exact ? ldc : nr;
  const float a = exact ? alpha : 1.0f, b = exact ? beta : 0.0f;
  switch (thirds * 4 + vecs) {
    case 5:
      MicroTile<kQ, 1>(d, kc, pa, pb, nr, a, b, out, ldo);
      break;
    case 6:
      MicroTile<kQ, 2>(d, kc, pa, pb, nr, a, b, out, ldo);
      break;
    case 9:
      MicroTile<2 * kQ, 1>(d, kc, pa, pb, nr, a, b, out, ldo);
      break;
    case 10:
      MicroTile<2 * kQ, 2>(d, kc, pa, pb, nr, a, b, out, ldo);
      break;
    case 13:
      MicroTile<kMr, 1>(d, kc, pa, pb, nr, a, b, out, ldo);
      break;
    default:
      MicroTile<kMr, 2>(d, kc, pa, pb, nr, a, b, out, ldo);
      break;
  }
  if (exact) return;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t q = 0; q < cols; ++q) {
      const float t = alpha * tile[r * nr + q];
      c[r * ldc + q] = beta == 0.0f ? t : t + beta * c[r * ldc + q];
    }
  }
}

// The tiles of one packed block: columns [0, cols) of rows [0, rows) of C.
template <class D>
HWY_INLINE void BlockTiles(D d, std::int64_t rows, std::int64_t cols, std::int64_t kc,
                           const float* HWY_RESTRICT pa, const float* HWY_RESTRICT pb, float alpha,
                           float beta, float* HWY_RESTRICT c, std::int64_t ldc) {
  const std::int64_t nr = kNv * static_cast<std::int64_t>(hn::Lanes(d));
  HWY_ALIGN float tile[kMr * kGemmNrMax];
  for (std::int64_t j = 0; j < cols; j += nr) {
    const float* pbj = pb + j * kc;
    const std::int64_t nc = std::min(nr, cols - j);
    for (std::int64_t i = 0; i < rows; i += kMr) {
      const float* pai = pa + i * kc;
      const std::int64_t mc = std::min<std::int64_t>(kMr, rows - i);
      if (mc == kMr && nc == nr) {
        MicroTile<kMr, kNv>(d, kc, pai, pbj, nr, alpha, beta, c + i * ldc + j, ldc);
      } else {
        EdgeTile(d, mc, nc, kc, pai, pbj, nr, alpha, beta, c + i * ldc + j, ldc, tile);
      }
    }
  }
}

// The rows of the register tile: the height of op(A)'s packed panels.
inline std::int64_t SgemmPackedRows() { return kMr; }

// op(A) [m, k] packed whole, in the panels SgemmPacked packs block by block: the block of K at
// p0 (kc = min(kGemmKc, k - p0) deep) at pa + p0 * mp, where mp is m rounded up to kMr, and in
// it the panel of rows i at + i * kc.
inline void SgemmPackA(Trans ta, std::int64_t m, std::int64_t k, const float* HWY_RESTRICT a,
                       std::int64_t lda, float* HWY_RESTRICT pa) {
  const std::int64_t mp = (m + kMr - 1) / kMr * kMr;
  for (std::int64_t p0 = 0; p0 < k; p0 += kGemmKc) {
    const std::int64_t kc = std::min(kGemmKc, k - p0);
    for (std::int64_t i = 0; i < m; i += kMr) {
      PackA(ta, a, lda, i, std::min<std::int64_t>(kMr, m - i), p0, kc, pa + p0 * mp + i * kc);
    }
  }
}

// The columns of the register tile: the width of op(B)'s packed panels.
inline std::int64_t SgemmPackedCols() {
  return kNv * static_cast<std::int64_t>(hn::Lanes(hn::ScalableTag<float>()));
}

// op(B) [k, n] packed whole, in the panels SgemmPacked packs block by block: the block of K at p0
// at pb + p0 * np, where np is n rounded up to the panel width, and in it the panel of columns j
// at + j * kc.
inline void SgemmPackB(Trans tb, std::int64_t k, std::int64_t n, const float* HWY_RESTRICT b,
                       std::int64_t ldb, float* HWY_RESTRICT pb) {
  const std::int64_t nr = SgemmPackedCols();
  const std::int64_t np = (n + nr - 1) / nr * nr;
  for (std::int64_t p0 = 0; p0 < k; p0 += kGemmKc) {
    const std::int64_t kc = std::min(kGemmKc, k - p0);
    for (std::int64_t j = 0; j < n; j += nr) {
      PackB(tb, b, ldb, p0, kc, j, std::min(nr, n - j), nr, pb + p0 * np + j * kc);
    }
  }
}

// Whether C [m, n] costs fewer vector lanes computed as its transpose (SgemmPacked on
// Cᵀ = op(B)ᵀ op(A)ᵀ, then Cᵀ transposed into C): the register tile spends whole vectors on C's
// columns and thirds of kMr on its rows, so 49 columns (a 7x7 plane) take 64 lanes of 16 where
// 49 rows take 52. The transposition costs about one lane-vector's step per element of C, and
// the swap must save 5 % more than that.
inline bool SgemmPackedSwaps(std::int64_t m, std::int64_t n, std::int64_t k) {
  const auto L = static_cast<std::int64_t>(hn::Lanes(hn::ScalableTag<float>()));
  constexpr std::int64_t kQ = kMr / 3;
  const auto lanes = [&](std::int64_t rows, std::int64_t cols) {
    return static_cast<double>((rows + kQ - 1) / kQ * kQ) *
           static_cast<double>((cols + L - 1) / L * L);
  };
  const double kd = static_cast<double>(k);
  const double swapped =
      lanes(n, m) * kd + static_cast<double>(L) * static_cast<double>(m) * static_cast<double>(n);
  return 1.05 * swapped < lanes(m, n) * kd;
}

// c[i * ldc + j] = ct[j * ldct + i] + beta * c[i * ldc + j] for i < m, j < n (c not read with
// beta 0): the swapped product's Cᵀ [n, m] into C.
inline void TransposeAdd(const float* HWY_RESTRICT ct, std::int64_t ldct, std::int64_t m,
                         std::int64_t n, float beta, float* HWY_RESTRICT c, std::int64_t ldc) {
  if (beta == 0.0f) {
    TransposeInto<false>(ct, ldct, n, m, c, ldc, 0.0f);
  } else {
    TransposeInto<true>(ct, ldct, n, m, c, ldc, beta);
  }
}

// sgemm_packed for k > 0 and alpha != 0, with packing buffers of kGemmMcMax x kGemmKc (pa) and
// min(n rounded up to kGemmNrMax, kGemmNc) x kGemmKc (pb) floats, 64-byte aligned. With
// `packed_a` (SgemmPackA's panels of this op(A)) A is not read and pa is not used; likewise
// `packed_b` (SgemmPackB's), B and pb.
inline void SgemmPacked(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                        float alpha, const float* HWY_RESTRICT a, std::int64_t lda,
                        const float* HWY_RESTRICT b, std::int64_t ldb, float beta,
                        float* HWY_RESTRICT c, std::int64_t ldc, const float* HWY_RESTRICT packed_a,
                        const float* HWY_RESTRICT packed_b, float* HWY_RESTRICT pa,
                        float* HWY_RESTRICT pb) {
  const hn::ScalableTag<float> d;
  const std::int64_t nr = kNv * static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t mp = (m + kMr - 1) / kMr * kMr;
  const std::int64_t np = (n + nr - 1) / nr * nr;
  for (std::int64_t j0 = 0; j0 < n; j0 += kGemmNc) {
    const std::int64_t nc = std::min(kGemmNc, n - j0);
    for (std::int64_t p0 = 0; p0 < k; p0 += kGemmKc) {
      const std::int64_t kc = std::min(kGemmKc, k - p0);
      // The first block of K applies the caller's beta, the later ones add onto it.
      const float beta_here = p0 == 0 ? beta : 1.0f;
      const float* panels_b = pb;
      if (packed_b != nullptr) {
        panels_b = packed_b + p0 * np + j0 * kc;
      } else {
        for (std::int64_t j = 0; j < nc; j += nr) {
          PackB(tb, b, ldb, p0, kc, j0 + j, std::min(nr, nc - j), nr, pb + j * kc);
        }
      }
      for (std::int64_t i0 = 0; i0 < m; i0 += kMc) {
        const std::int64_t mc = std::min(kMc, m - i0);
        const float* panels = pa;
        if (packed_a != nullptr) {
          panels = packed_a + p0 * mp + i0 * kc;
        } else {
          for (std::int64_t i = 0; i < mc; i += kMr) {
            PackA(ta, a, lda, i0 + i, std::min<std::int64_t>(kMr, mc - i), p0, kc, pa + i * kc);
          }
        }
        BlockTiles(d, mc, nc, kc, panels, panels_b, alpha, beta_here, c + i0 * ldc + j0, ldc);
      }
    }
  }
}

inline bool SgemmPackedWide() { return hn::Lanes(hn::ScalableTag<float>()) >= 16; }

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
