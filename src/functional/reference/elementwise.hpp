#pragma once
// Reference twin of functional/detail/elementwise_kernels.hpp in plain scalar loops, the oracle
// of the parity test run on every SIMD target (both sides round the same operations in the same
// order, so they agree exactly).
#include <algorithm>
#include <cstdint>

#include "functional/detail/elementwise_kernels.hpp"

namespace cvattn::reference {

inline float binary(detail::BinaryOp op, float a, float b) {
  switch (op) {
    case detail::BinaryOp::add:
      return a + b;
    case detail::BinaryOp::sub:
      return a - b;
    case detail::BinaryOp::mul:
      return a * b;
    case detail::BinaryOp::div:
      return a / b;
  }
  return a;
}

inline void binary_row(detail::BinaryOp op, const float* a, std::int64_t sa, const float* b,
                       std::int64_t sb, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = binary(op, a[i * sa], b[i * sb]);
}

inline void fill_rows(float* out, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                      const float* values) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < cols; ++j) out[r * stride + j] = values ? values[r] : 0.0f;
  }
}

inline void weighted_sum_rows(const float* rows, std::int64_t k, std::int64_t stride,
                              const float* weights, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    float a = 0.0f;
    for (std::int64_t j = 0; j < k; ++j) {
      const float p = weights[j] * rows[j * stride + i];
      a = a + p;
    }
    out[i] = a;
  }
}

inline void column_sums(const float* base, std::int64_t stride, std::int64_t rows, std::int64_t n,
                        double* acc) {
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k0 = 0; k0 < rows; k0 += detail::kColumnRowBlock) {
      float part = 0.0f;
      for (std::int64_t k = k0; k < std::min(rows, k0 + detail::kColumnRowBlock); ++k) {
        part += base[k * stride + i];
      }
      acc[i] += static_cast<double>(part);
    }
  }
}

}  // namespace cvattn::reference
