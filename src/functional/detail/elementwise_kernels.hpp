#pragma once
// The inner loops of functional/tensor_ops.cpp's broadcasting binary ops and column means, the
// bias fill of the convolutions' GEMM outputs and the expert mix of dynamic convolutions, as
// runtime-dispatched Highway kernels (bodies in elementwise_kernels-inl.h, reference twin in
// functional/reference/elementwise.hpp). Private to cvattn.
#include <cstdint>

namespace cvattn::detail {

enum class BinaryOp { add, sub, mul, div };

// out[i] = a[i * sa] op b[i * sb] for i < n, each stride 0 (a broadcast scalar) or 1. out may be
// a or b (in place) but must not otherwise overlap them.
void binary_row(BinaryOp op, const float* a, std::int64_t sa, const float* b, std::int64_t sb,
                float* out, std::int64_t n);

// `rows` rows of n at once (one dispatch for all: short rows made the per-call cost show): row r
// reads a + a_off[r] and b + b_off[r] with the strides sa, sb and writes out + r * n.
void binary_rows(BinaryOp op, const float* a, const std::int64_t* a_off, std::int64_t sa,
                 const float* b, const std::int64_t* b_off, std::int64_t sb, float* out,
                 std::int64_t n, std::int64_t rows);

// out[r * stride + j] = values[r] (0 when values is null) for r < rows, j < cols: the bias rows
// a convolution's GEMM then accumulates onto. Dispatched: the plain loop compiled for the x86-64
// baseline stored 16 bytes at a time, a tenth of a 1x1 convolution's time on Zen 4.
void fill_rows(float* out, std::int64_t rows, std::int64_t cols, std::int64_t stride,
               const float* values);

// out[i] = sum over j < k of weights[j] * rows[j * stride + i], for i < n: products and sums
// each rounded (no fused multiply-add, so every target gives the same bits), added in j order
// from 0; k = 0 gives zeros. functional::aggregate_experts' mix of K expert kernels: one pass
// writing out, where adding one expert at a time read and wrote it K times.
void weighted_sum_rows(const float* rows, std::int64_t k, std::int64_t stride, const float* weights,
                       float* out, std::int64_t n);

// Rows of a column sum summed in float before the block is added in double.
inline constexpr std::int64_t kColumnRowBlock = 128;

// acc[i] += sum over k < rows of base[k * stride + i], for i < n: each column summed in float
// over blocks of kColumnRowBlock rows (in row order), the blocks added to acc in double.
void column_sums(const float* base, std::int64_t stride, std::int64_t rows, std::int64_t n,
                 double* acc);

}  // namespace cvattn::detail
