// Runtime dispatch of cvattn's packed matrix product (gemm_kernels.hpp); the bodies are in
// gemm_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/gemm_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/gemm_kernels-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <limits>
#include <optional>

#include "core/dispatch.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn::detail {

HWY_EXPORT(SgemmPacked);
HWY_EXPORT(SgemmPackedWide);
HWY_EXPORT(SgemmPackedRows);
HWY_EXPORT(SgemmPackA);
HWY_EXPORT(SgemmPackB);
HWY_EXPORT(SgemmPackedCols);
HWY_EXPORT(SgemmPackedSwaps);
HWY_EXPORT(TransposeAdd);

bool sgemm_packed_wide() { return CVATTN_DISPATCH(SgemmPackedWide)(); }

std::int64_t sgemm_packed_rows() { return CVATTN_DISPATCH(SgemmPackedRows)(); }

std::int64_t sgemm_packed_cols() { return CVATTN_DISPATCH(SgemmPackedCols)(); }

namespace {

// m rounded up to `tile`, times k: the floats of m rows (or columns) of depth k packed in panels
// `tile` wide.
std::int64_t panel_floats(std::int64_t m, std::int64_t k, std::int64_t tile, const char* where) {
  CVATTN_CHECK(m >= 0 && k >= 0, ShapeError, where, ": negative size ", m, " x ", k);
  const std::int64_t mp = (m / tile + (m % tile != 0)) * tile;
  CVATTN_CHECK(k == 0 || mp <= std::numeric_limits<std::int64_t>::max() / 4 / k, ShapeError, where,
               ": ", m, " x ", k, " floats overflow");
  return mp * k;
}

// op(A)ᵀ is A read with the other transpose flag.
Trans flip(Trans t) { return t == Trans::no ? Trans::yes : Trans::no; }

}  // namespace

std::int64_t sgemm_packed_a_size(std::int64_t m, std::int64_t k) {
  return panel_floats(m, k, sgemm_packed_rows(), "sgemm_pack_a");
}

std::int64_t sgemm_packed_at_size(std::int64_t m, std::int64_t k) {
  return panel_floats(m, k, sgemm_packed_cols(), "sgemm_pack_at");
}

bool sgemm_packed_swaps(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m > 0 && n > 0 && k > 0 && CVATTN_DISPATCH(SgemmPackedSwaps)(m, n, k);
}

void sgemm_pack_a(Trans ta, std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
                  float* out) {
  if (m <= 0 || k <= 0) return;
  CVATTN_DISPATCH(SgemmPackA)(ta, m, k, a, lda, out);
}

void sgemm_pack_at(Trans ta, std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
                   float* out) {
  if (m <= 0 || k <= 0) return;
  CVATTN_DISPATCH(SgemmPackB)(flip(ta), k, m, a, lda, out);
}

namespace {

void run_packed(const float* packed_a, const float* packed_b, Trans ta, Trans tb, std::int64_t m,
                std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda,
                const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    // Nothing to multiply: C = beta * C, and C is not read with beta 0 (BLAS semantics).
    for (std::int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      if (beta == 0.0f) {
        std::fill(row, row + n, 0.0f);
      } else if (beta != 1.0f) {
        for (std::int64_t j = 0; j < n; ++j) row[j] *= beta;
      }
    }
    return;
  }
  const std::int64_t kc = std::min(k, kGemmKc);
  std::optional<Workspace> pa, pb;
  if (packed_a == nullptr) pa.emplace(Shape{kGemmMcMax * kc}, "sgemm_packed");
  if (packed_b == nullptr) {
    const std::int64_t cols = (std::min(n, kGemmNc) + kGemmNrMax - 1) / kGemmNrMax * kGemmNrMax;
    pb.emplace(Shape{cols * kc}, "sgemm_packed");
  }
  CVATTN_DISPATCH(SgemmPacked)
  (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, packed_a, packed_b,
   pa ? pa->data() : nullptr, pb ? pb->data() : nullptr);
}

// C = alpha op(A) op(B) + beta C by way of Cᵀ = alpha op(B)ᵀ op(A)ᵀ (op(B)ᵀ is B read with the
// other transpose flag, likewise op(A)ᵀ), made in scratch and transposed into C.
void run_swapped(const float* packed_at, Trans ta, Trans tb, std::int64_t m, std::int64_t n,
                 std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
                 std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {  // only scales C
    run_packed(nullptr, nullptr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const Workspace ct({n, m}, "sgemm_packed (transposed product)");
  run_packed(nullptr, packed_at, flip(tb), flip(ta), n, m, k, alpha, b, ldb, a, lda, 0.0f,
             ct.data(), m);
  CVATTN_DISPATCH(TransposeAdd)(ct.data(), m, m, n, beta, c, ldc);
}

}  // namespace

void sgemm_packed(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                  float* c, std::int64_t ldc) {
  run_packed(nullptr, nullptr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sgemm_packed_swapped(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                          float alpha, const float* a, std::int64_t lda, const float* b,
                          std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  run_swapped(nullptr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sgemm_packed_pre(const float* packed_a, Trans tb, std::int64_t m, std::int64_t n,
                      std::int64_t k, float alpha, const float* b, std::int64_t ldb, float beta,
                      float* c, std::int64_t ldc) {
  run_packed(packed_a, nullptr, Trans::no, tb, m, n, k, alpha, nullptr, 0, b, ldb, beta, c, ldc);
}

void sgemm_packed_pre_swapped(const float* packed_at, Trans tb, std::int64_t m, std::int64_t n,
                              std::int64_t k, float alpha, const float* b, std::int64_t ldb,
                              float beta, float* c, std::int64_t ldc) {
  run_swapped(packed_at, Trans::no, tb, m, n, k, alpha, nullptr, 0, b, ldb, beta, c, ldc);
}

}  // namespace cvattn::detail
#endif
