// Runtime dispatch of cvattn's packed matrix product (gemm_kernels.hpp); the bodies are in
// gemm_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/gemm_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/gemm_kernels-inl.h"

#if HWY_ONCE
#include <algorithm>

#include "core/dispatch.hpp"
#include "core/workspace.hpp"

namespace cvattn::detail {

HWY_EXPORT(SgemmPacked);
HWY_EXPORT(SgemmPackedWide);

bool sgemm_packed_wide() { return CVATTN_DISPATCH(SgemmPackedWide)(); }

void sgemm_packed(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                  float* c, std::int64_t ldc) {
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
  const Workspace pa({kGemmMcMax * kc}, "sgemm_packed");
  const Workspace pb({cols * kc}, "sgemm_packed");
  CVATTN_DISPATCH(SgemmPacked)
  (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pa.data(), pb.data());
}

}  // namespace cvattn::detail
#endif
