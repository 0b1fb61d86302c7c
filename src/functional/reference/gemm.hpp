#pragma once
// Reference twin of functional/detail/gemm_kernels.hpp: C = alpha * op(A) op(B) + beta * C by
// the definition, each sum taken in double, and the sum of the products' magnitudes that bounds
// the rounding error of a float sum of the same products (the parity test's tolerance).
#include <cmath>
#include <cstdint>
#include <vector>

#include "functional/detail/gemm.hpp"

namespace cvattn::reference {

struct GemmResult {
  std::vector<double> value;      // [m, n], row-major
  std::vector<double> magnitude;  // sum_p |alpha a_ip b_pj| + |beta c_ij|
};

inline GemmResult sgemm(detail::Trans ta, detail::Trans tb, std::int64_t m, std::int64_t n,
                        std::int64_t k, float alpha, const float* a, std::int64_t lda,
                        const float* b, std::int64_t ldb, float beta, const float* c,
                        std::int64_t ldc) {
  GemmResult out{std::vector<double>(static_cast<std::size_t>(m * n)),
                 std::vector<double>(static_cast<std::size_t>(m * n))};
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0, mag = 0.0;
      for (std::int64_t p = 0; p < k && alpha != 0.0f; ++p) {
        const double av = ta == detail::Trans::no ? a[i * lda + p] : a[p * lda + i];
        const double bv = tb == detail::Trans::no ? b[p * ldb + j] : b[j * ldb + p];
        sum += av * bv;
        mag += std::fabs(av * bv);
      }
      // beta 0 does not read C (it may hold NaN), as in BLAS.
      const double cv = beta == 0.0f ? 0.0 : static_cast<double>(beta) * c[i * ldc + j];
      out.value[static_cast<std::size_t>(i * n + j)] = alpha * sum + cv;
      out.magnitude[static_cast<std::size_t>(i * n + j)] = std::fabs(alpha) * mag + std::fabs(cv);
    }
  }
  return out;
}

}  // namespace cvattn::reference
