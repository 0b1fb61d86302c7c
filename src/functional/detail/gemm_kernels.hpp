#pragma once
// cvattn's own single-precision matrix product: packed panels and a register tile per Highway
// target (bodies in gemm_kernels-inl.h, reference twin in functional/reference/gemm.hpp).
// detail::sgemm takes it where the BLAS it was built with would multiply with narrower vectors
// than the CPU has: Debian's OpenBLAS 0.3.21 runs its AVX2 kernels on an AVX-512 CPU whenever
// OPENBLAS_CORETYPE says so or it does not recognise the core
// (docs/performance.md#matrix-products). Runs on the calling thread; callers split the work between
// threads themselves.
#include <cstdint>

#include "functional/detail/gemm.hpp"

namespace cvattn::detail {

// Depth of one packed block of K, and the most columns of op(B) packed at once.
inline constexpr std::int64_t kGemmKc = 256;
inline constexpr std::int64_t kGemmNc = 2048;
// Upper bounds over every target of the rows of one packed block of op(A) and the columns of one
// register tile, for the size of the packing buffers.
inline constexpr std::int64_t kGemmMcMax = 192;
inline constexpr std::int64_t kGemmNrMax = 64;

// Same contract as sgemm (gemm.hpp): C[M,N] = alpha * op(A) * op(B) + beta * C, row-major; with
// beta 0, C is not read; with alpha 0 or k 0, A and B are not read.
void sgemm_packed(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                  float* c, std::int64_t ldc);

// op(A) packed once for many products (a layer's weight): sgemm_pack_a writes the panels that
// sgemm_packed packs on every call, for the register tile of the target in use
// (sgemm_packed_rows() rows per panel), into sgemm_packed_a_size(m, k) floats (ShapeError when
// that overflows); sgemm_packed_pre multiplies with them, on a target with the same
// sgemm_packed_rows(), and gives exactly sgemm_packed(ta, ...)'s result.
std::int64_t sgemm_packed_rows();
std::int64_t sgemm_packed_a_size(std::int64_t m, std::int64_t k);
void sgemm_pack_a(Trans ta, std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
                  float* out);
void sgemm_packed_pre(const float* packed_a, Trans tb, std::int64_t m, std::int64_t n,
                      std::int64_t k, float alpha, const float* b, std::int64_t ldb, float beta,
                      float* c, std::int64_t ldc);

// C computed as its transpose, Cᵀ = op(B)ᵀ op(A)ᵀ, then transposed into C: same contract as
// sgemm_packed, rounded as differently as two orders of the same products. It wastes fewer vector
// lanes where C has few columns and many rows (a conv's [Cout, 49] output on a 7x7 plane);
// sgemm_packed_swaps says where it should, by the register tile of the target in use.
bool sgemm_packed_swaps(std::int64_t m, std::int64_t n, std::int64_t k);
void sgemm_packed_swapped(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                          float alpha, const float* a, std::int64_t lda, const float* b,
                          std::int64_t ldb, float beta, float* c, std::int64_t ldc);

// op(A)ᵀ packed once for the swapped product, where it is the right operand (a layer's weight
// multiplying narrow inputs): sgemm_pack_at writes sgemm_packed_at_size(m, k) floats of panels
// sgemm_packed_cols() wide (ShapeError when that overflows) to a 64-byte aligned `out`, whose
// vectors the product loads whole; sgemm_packed_pre_swapped multiplies with them, on a target with
// the same sgemm_packed_cols(), and gives exactly sgemm_packed_swapped(ta, ...)'s result.
std::int64_t sgemm_packed_cols();
std::int64_t sgemm_packed_at_size(std::int64_t m, std::int64_t k);
void sgemm_pack_at(Trans ta, std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
                   float* out);
void sgemm_packed_pre_swapped(const float* packed_at, Trans tb, std::int64_t m, std::int64_t n,
                              std::int64_t k, float alpha, const float* b, std::int64_t ldb,
                              float beta, float* c, std::int64_t ldc);

// Whether the SIMD target in use has vectors of 512 bits, where the packed product measured level
// with OpenBLAS's AVX-512 kernels and far ahead of its AVX2 ones (docs/performance.md).
bool sgemm_packed_wide();

}  // namespace cvattn::detail
