// The dispatched passes of softmax / log_softmax along an axis
// (functional/detail/softmax_axis_kernels.hpp) against their scalar reference twin on every SIMD
// target this build and CPU support: random rows and columns of every length around the vector
// widths (the padded tail), unaligned starts, and the special values PyTorch defines (NaN, -inf,
// +inf).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "functional/detail/softmax_axis_kernels.hpp"
#include "functional/reference/softmax_axis.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

constexpr std::int64_t kLengths[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 1000, 1023};
constexpr float kInf = std::numeric_limits<float>::infinity();

// e^v by ShortExp (~1 ulp) against std::exp (< 1 ulp): a few ulp of the value; for the
// log form (x - m, exact subtraction in both) equality.
void expect_value(float got, float want, bool store_exp, std::int64_t j) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << "index " << j;
  } else if (!store_exp || std::isinf(want)) {
    EXPECT_EQ(got, want) << "index " << j;
  } else if (want < 2e-38f) {  // e^v for v < -87: 0 instead of a tiny or denormal value
    EXPECT_NEAR(got, want, 2e-38f) << "index " << j;
  } else {
    EXPECT_NEAR(got, want, 4e-7 * std::fabs(want)) << "index " << j;
  }
}

TEST(SimdParity, SoftmaxAxisRows) {
  const std::vector<float> x = test::random_vector(1100, 20261202, -30.0f, 10.0f);
  test::for_each_simd_target([&] {
    for (const bool log : {false, true}) {
      for (const std::int64_t n : kLengths) {
        SCOPED_TRACE(n);
        const float* in = x.data() + 1;  // unaligned
        std::vector<float> got(static_cast<std::size_t>(n)), want(got.size());
        detail::softmax_row_exact(in, got.data(), n, log);
        reference::softmax_row_exact(in, want.data(), n, log);
        // A few ulp per e^v, and the sum of n positive terms in another order (n ulp of it).
        const double rel = 8e-7 + 1.2e-7 * static_cast<double>(n);
        for (std::int64_t j = 0; j < n; ++j) {
          const auto u = static_cast<std::size_t>(j);
          const double bound = log ? rel * (1.0 + std::fabs(want[u])) : rel * want[u] + 2e-38;
          EXPECT_NEAR(got[u], want[u], bound) << "index " << j << (log ? " log" : "");
        }
      }
    }
  });
}

TEST(SimdParity, SoftmaxAxisRowSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  test::for_each_simd_target([&] {
    for (const bool log : {false, true}) {
      for (const std::int64_t n : {1, 5, 8, 13}) {
        SCOPED_TRACE(n);
        std::vector<float> out(static_cast<std::size_t>(n));
        // -inf entries: weight 0 (log -inf); the others as without them.
        std::vector<float> x(static_cast<std::size_t>(n), 1.5f);
        x[0] = -kInf;
        std::vector<float> want(x.size());
        detail::softmax_row_exact(x.data(), out.data(), n, log);
        reference::softmax_row_exact(x.data(), want.data(), n, log);
        for (std::size_t u = 0; u < x.size(); ++u) {
          if (std::isnan(want[u])) {
            EXPECT_TRUE(std::isnan(out[u])) << u;  // n = 1: the only entry is -inf
          } else if (std::isinf(want[u])) {
            EXPECT_EQ(out[u], want[u]) << u;
          } else {
            EXPECT_NEAR(out[u], want[u], 1e-6) << u;
          }
        }
        // A NaN anywhere, an all -inf row or a +inf: NaN throughout, as in PyTorch.
        for (const float special : {nan, kInf}) {
          std::vector<float> y(static_cast<std::size_t>(n), 0.25f);
          y[static_cast<std::size_t>(n - 1)] = special;
          detail::softmax_row_exact(y.data(), out.data(), n, log);
          for (const float v : out) EXPECT_TRUE(std::isnan(v)) << special;
        }
        const std::vector<float> all_neg_inf(static_cast<std::size_t>(n), -kInf);
        detail::softmax_row_exact(all_neg_inf.data(), out.data(), n, log);
        for (const float v : out) EXPECT_TRUE(std::isnan(v));
      }
    }
  });
}

TEST(SimdParity, SoftmaxAxisColumns) {
  const std::vector<float> x = test::random_vector(1100, 7, -30.0f, 10.0f);
  const std::vector<float> m0 = test::random_vector(1100, 8, -5.0f, 12.0f);
  const std::vector<float> s0 = test::random_vector(1100, 9, 0.0f, 3.0f);
  test::for_each_simd_target([&] {
    for (const bool store_exp : {true, false}) {
      for (const std::int64_t n : kLengths) {
        SCOPED_TRACE(n);
        const float* in = x.data() + 1;
        std::vector<float> m(m0.begin(), m0.begin() + n), m_ref(m);
        detail::max_cols(m.data(), in, n);
        reference::max_cols(m_ref.data(), in, n);
        EXPECT_EQ(m, m_ref);
        std::vector<float> got(static_cast<std::size_t>(n)), want(got.size());
        std::vector<float> s(s0.begin(), s0.begin() + n), s_ref(s);
        detail::exp_shift_cols(in, m.data(), got.data(), s.data(), n, store_exp);
        reference::exp_shift_cols(in, m.data(), want.data(), s_ref.data(), n, store_exp);
        for (std::int64_t j = 0; j < n; ++j) {
          const auto u = static_cast<std::size_t>(j);
          expect_value(got[u], want[u], store_exp, j);
          EXPECT_NEAR(s[u], s_ref[u], 4e-7 * s_ref[u]) << "index " << j;
        }
        for (const bool multiply : {true, false}) {
          std::vector<float> a(in, in + n), b(a);
          detail::combine_cols(a.data(), m0.data() + 3, n, multiply);
          reference::combine_cols(b.data(), m0.data() + 3, n, multiply);
          EXPECT_EQ(a, b);
        }
      }
    }
  });
}

TEST(SimdParity, SoftmaxAxisSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Shifted values e^(x - m): -inf gives 0 (log form -inf), far below the max underflows to 0,
  // NaN stays NaN, inf - inf is NaN; 0 - 0 is 1.
  const std::vector<float> x = {-kInf, -200.0f, -104.5f, -103.0f, -87.5f, nan,  0.0f,  -0.0f,
                                kInf,  1.0f,    -1e-30f, 3.5f,    -kInf,  2.0f, -50.0f};
  const std::vector<float> m = {0.0f, 0.0f,  0.0f, 0.0f, 0.0f,  0.0f, 0.0f, 0.0f,
                                kInf, -kInf, 0.0f, 3.5f, -kInf, nan,  -1.0f};
  test::for_each_simd_target([&] {
    const auto n = static_cast<std::int64_t>(x.size());
    for (const bool store_exp : {true, false}) {
      std::vector<float> got(x.size()), want(x.size()), s(x.size(), 0.0f), s_ref(s);
      detail::exp_shift_cols(x.data(), m.data(), got.data(), s.data(), n, store_exp);
      reference::exp_shift_cols(x.data(), m.data(), want.data(), s_ref.data(), n, store_exp);
      for (std::int64_t j = 0; j < n; ++j) {
        const auto u = static_cast<std::size_t>(j);
        expect_value(got[u], want[u], store_exp, j);
        expect_value(s[u], s_ref[u], true, j);
      }
    }
  });
}

}  // namespace
}  // namespace cvattn
