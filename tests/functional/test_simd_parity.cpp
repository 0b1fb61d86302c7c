// Every runtime-dispatched kernel against its reference twin (src/functional/reference/), on
// every SIMD target this build and CPU support, over random sizes that hit the loop tails.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/core/simd.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/reduce.hpp"
#include "functional/reference/reduce.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

using test::for_each_simd_target;

std::vector<float> random_vector(std::int64_t n, std::uint64_t seed, float lo, float hi) {
  test::Random rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

TEST(SimdTargets, NamesAreConsistent) {
  const auto compiled = simd::compiled_targets();
  const auto supported = simd::supported_targets();
  ASSERT_FALSE(compiled.empty());
  ASSERT_FALSE(supported.empty());
  for (const auto& s : supported) {
    EXPECT_NE(std::find(compiled.begin(), compiled.end(), s), compiled.end()) << s;
  }
  EXPECT_EQ(simd::current_target(), supported.front());
  EXPECT_THROW(simd::set_max_target("avx9000"), ValueError);
  EXPECT_EQ(simd::current_target(), supported.front());
}

TEST(SimdParity, PlaneMeanMax) {
  // Sizes around the vector groups (up to 64 floats on AVX-512) and the 2048-element block.
  const std::int64_t sizes[] = {1, 3, 15, 16, 17, 63, 64, 65, 127, 1000, 2047, 2048, 2049, 5003,
                                12544};
  for_each_simd_target([&] {
    for (const std::int64_t n : sizes) {
      SCOPED_TRACE("n = " + std::to_string(n));
      // An offset of one float makes the loads unaligned.
      const auto v = random_vector(n + 1, static_cast<std::uint64_t>(n), -2.0f, 3.0f);
      const float* p = v.data() + 1;
      const auto got = detail::plane_mean_max(p, n);
      const auto want = reference::plane_mean_max(p, n);
      EXPECT_NEAR(got.mean, want.mean, 1e-6 + 1e-6 * std::fabs(want.mean));
      EXPECT_EQ(got.max, want.max);
      EXPECT_EQ(detail::plane_mean(p, n), got.mean);
    }
  });
}

TEST(SimdParity, PlaneMeanMaxNonFinite) {
  for_each_simd_target([&] {
    for (const std::int64_t at : {0, 5, 100, 2050}) {
      auto v = random_vector(3001, 7, -1.0f, 1.0f);
      v[static_cast<std::size_t>(at)] = std::numeric_limits<float>::quiet_NaN();
      const auto got = detail::plane_mean_max(v.data(), 3001);
      EXPECT_TRUE(std::isnan(got.mean));
      EXPECT_TRUE(std::isnan(got.max));
      v[static_cast<std::size_t>(at)] = std::numeric_limits<float>::infinity();
      const auto inf = detail::plane_mean_max(v.data(), 3001);
      EXPECT_EQ(inf.max, std::numeric_limits<float>::infinity());
      EXPECT_EQ(inf.mean, std::numeric_limits<float>::infinity());
    }
  });
}

// The GEMM behind conv2d/linear/attention (OpenBLAS when built with it) against the Eigen
// product, for every transpose combination, strided operands, and beta 0 / 1 / other.
TEST(GemmParity, AllTransposesAndStrides) {
  struct Case {
    std::int64_t m, n, k;
  };
  const Case cases[] = {{1, 1, 1}, {7, 5, 3}, {64, 49, 576}, {33, 197, 64}, {130, 17, 257}};
  for (const auto& c : cases) {
    for (const auto ta : {detail::Trans::no, detail::Trans::yes}) {
      for (const auto tb : {detail::Trans::no, detail::Trans::yes}) {
        for (const float beta : {0.0f, 1.0f, 0.5f}) {
          SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
          const std::int64_t lda = (ta == detail::Trans::no ? c.k : c.m) + 3;
          const std::int64_t ldb = (tb == detail::Trans::no ? c.n : c.k) + 2;
          const std::int64_t ldc = c.n + 5;
          const std::int64_t a_rows = ta == detail::Trans::no ? c.m : c.k;
          const std::int64_t b_rows = tb == detail::Trans::no ? c.k : c.n;
          const auto a = random_vector(a_rows * lda, 1, -1, 1);
          const auto b = random_vector(b_rows * ldb, 2, -1, 1);
          auto got = random_vector(c.m * ldc, 3, -1, 1);
          auto want = got;
          detail::sgemm(ta, tb, c.m, c.n, c.k, 0.75f, a.data(), lda, b.data(), ldb, beta,
                        got.data(), ldc);
          detail::sgemm_eigen(ta, tb, c.m, c.n, c.k, 0.75f, a.data(), lda, b.data(), ldb, beta,
                              want.data(), ldc);
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << "at " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace cvattn
