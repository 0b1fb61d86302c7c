#pragma once
// The one single-precision matrix product behind conv2d, linear, the score functions and the
// portable attention path. Row-major: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
// OpenBLAS when the build has it (its kernels are chosen for the CPU at run time, so a portable
// build multiplies at the core's speed: figures in docs/performance.md), Eigen otherwise.
// Called from inside cvattn's parallel regions it runs on the calling thread only.
#include <cstdint>

namespace cvattn::detail {

enum class Trans { no, yes };

void sgemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc);

// The Eigen product, kept as the reference the OpenBLAS path is tested against.
void sgemm_eigen(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                 float* c, std::int64_t ldc);

// "openblas (openmp)", "openblas (pthreads)", "openblas (serial)" or "eigen".
const char* gemm_backend();

}  // namespace cvattn::detail
