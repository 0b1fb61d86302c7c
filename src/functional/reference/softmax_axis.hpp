#pragma once
// Reference twin of functional/detail/softmax_axis_kernels.hpp: the same passes in scalar float
// code with std::exp, the oracle of test_simd_parity_softmax_axis on every SIMD target.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cvattn::reference {

inline void softmax_row_exact(const float* x, float* out, std::int64_t n, bool log) {
  float m = x[0];
  for (std::int64_t j = 1; j < n; ++j) m = std::max(m, x[j]);
  float s = 0.0f;
  for (std::int64_t j = 0; j < n; ++j) {
    const float v = x[j] - m;
    s += std::exp(v);
    out[j] = log ? v : std::exp(v);
  }
  const float c = log ? std::log(s) : 1.0f / s;
  for (std::int64_t j = 0; j < n; ++j) out[j] = log ? out[j] - c : out[j] * c;
}

inline void exp_shift_cols(const float* x, const float* m, float* out, float* s, std::int64_t n,
                           bool store_exp) {
  for (std::int64_t j = 0; j < n; ++j) {
    const float v = x[j] - m[j];
    const float e = std::exp(v);
    s[j] += e;
    out[j] = store_exp ? e : v;
  }
}

inline void max_cols(float* m, const float* x, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) m[j] = std::max(m[j], x[j]);
}

inline void combine_cols(float* x, const float* a, std::int64_t n, bool multiply) {
  for (std::int64_t j = 0; j < n; ++j) x[j] = multiply ? x[j] * a[j] : x[j] - a[j];
}

}  // namespace cvattn::reference
