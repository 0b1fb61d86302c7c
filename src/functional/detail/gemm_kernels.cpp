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

#include "core/dispatch.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn::detail {

HWY_EXPORT(SgemmPacked);
HWY_EXPORT(SgemmPackedWide);
HWY_EXPORT(SgemmPackedRows);
HWY_EXPORT(SgemmPackA);

bool sgemm_packed_wide() { return CVATTN_DISPATCH(SgemmPackedWide)(); }

std::int64_t sgemm_packed_rows() { return CVATTN_DISPATCH(SgemmPackedRows)(); }

std::int64_t sgemm_packed_a_size(std::int64_t m, std::int64_t k) {
  CVATTN_CHECK(m >= 0 && k >= 0, ShapeError, "sgemm_pack_a: negative size ", m, " x ", k);
  const std::int64_t rows = sgemm_packed_rows();
  const std::int64_t mp = (m / rows + (m % rows != 0)) * rows;
  CVATTN_CHECK(k == 0 || mp <= std::numeric_limits<std::int64_t>::max() / 4 / k, ShapeError,
               "sgemm_pack_a: ", m, " x ", k, " floats overflow");
  return mp * k;
}

void sgemm_pack_a(Trans ta, std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
                  float* out) {
  if (m <= 0 || k <= 0) return;
  CVATTN_DISPATCH(SgemmPackA)(ta, m, k, a, lda, out);
}

namespace {

void run_packed(const float* packed_a, Trans ta, Trans tb, std::int64_t m, std::int64_t n,
                std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
                std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
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
  const std::int64_t cols = (std::min(n, kGemmNc) + kGemmNrMax - 1) / kGemmNrMax * kGemmNrMax;
  const Workspace pb({cols * kc}, "sgemm_packed");
  if (packed_a != nullptr) {
    CVATTN_DISPATCH(SgemmPacked)
    (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, packed_a, nullptr, pb.data());
    return;
  }
  const Workspace pa({kGemmMcMax * kc}, "sgemm_packed");
  CVATTN_DISPATCH(SgemmPacked)
  (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr, pa.data(), pb.data());
}

}  // namespace

void sgemm_packed(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                  float* c, std::int64_t ldc) {
  run_packed(nullptr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sgemm_packed_pre(const float* packed_a, Trans tb, std::int64_t m, std::int64_t n,
                      std::int64_t k, float alpha, const float* b, std::int64_t ldb, float beta,
                      float* c, std::int64_t ldc) {
  run_packed(packed_a, Trans::no, tb, m, n, k, alpha, nullptr, 0, b, ldb, beta, c, ldc);
}

}  // namespace cvattn::detail
#endif
