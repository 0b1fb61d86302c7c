#pragma once
// The one single-precision matrix product behind conv2d, linear, the score functions and the
// portable attention path. Row-major: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
// OpenBLAS when the build has it (its kernels are chosen for the CPU at run time, so a portable
// build multiplies at the core's speed: figures in docs/performance.md), except where cvattn's own
// packed product (gemm_kernels.hpp) has wider vectors than the OpenBLAS core in use, or where
// there is no OpenBLAS or the sizes exceed its int arguments.
// Called from inside cvattn's parallel regions it runs on the calling thread only.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace cvattn::detail {

enum class Trans { no, yes };

void sgemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc);

// op(A) [m, k] packed once for many products with it on the left (a layer's weight, as ONNX
// Runtime and ncnn pack theirs at load): sgemm_prepacked below then skips packing A on every
// call, which was a fifth of a 512-channel conv's product (docs/performance.md#matrix-products).
// Empty, and ignored, where sgemm does not multiply with cvattn's packed product (an OpenBLAS
// with vectors as wide as the target's); holds a copy, so A may change or go afterwards.
// Immutable: one PackedA serves concurrent products. Form::transposed packs op(A)ᵀ instead, for
// the products sgemm computes as Cᵀ (sgemm_swaps).
class PackedA {
 public:
  enum class Form { rows, transposed };
  PackedA() = default;
  PackedA(Trans ta, std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
          Form form = Form::rows);
  [[nodiscard]] bool empty() const noexcept { return panels_ == nullptr; }
  [[nodiscard]] Form form() const noexcept { return form_; }
  // The panels (64-byte aligned: the product loads whole vectors of the transposed form) when
  // they were packed for this m x k and the target in use, else nullptr.
  [[nodiscard]] const float* panels_for(std::int64_t m, std::int64_t k) const;

 private:
  struct Free {
    void operator()(float* p) const noexcept { std::free(p); }
  };
  std::int64_t m_ = 0, k_ = 0, tile_ = 0;  // tile_: the register tile's rows, or columns
  Form form_ = Form::rows;
  std::unique_ptr<float[], Free> panels_;
};

// Whether sgemm computes C [m, n] as its transpose (cvattn's packed product on a C with few
// columns, whose vectors would run part empty: gemm_kernels.hpp): the form a PackedA for such
// products should have.
[[nodiscard]] bool sgemm_swaps(std::int64_t m, std::int64_t n, std::int64_t k);

// sgemm(ta, tb, ...) with op(A) also given packed: exactly the same result, A not read when the
// panels are used (those of the form sgemm_swaps asks for).
void sgemm_prepacked(const PackedA& packed, Trans ta, Trans tb, std::int64_t m, std::int64_t n,
                     std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
                     std::int64_t ldb, float beta, float* c, std::int64_t ldc);

// The Eigen product, kept as the reference the OpenBLAS and packed paths are tested against.
void sgemm_eigen(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                 float* c, std::int64_t ldc);

// What sgemm multiplies with on the SIMD target in use: "cvattn packed (...)" or "openblas
// (openmp, core Haswell)" and the like.
std::string gemm_backend();

}  // namespace cvattn::detail
