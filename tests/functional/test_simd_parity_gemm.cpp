// cvattn's packed matrix product (functional/detail/gemm_kernels.hpp) against its reference twin
// on every SIMD target this build and CPU support: every transpose pair, sizes around the register
// tiles (6 and 12 rows, 8 to 32 columns) and their edge tiles (thirds of the rows, one vector),
// the packed blocks (K around 256, N past 2048), strided rows, alpha and beta of every kind, NaN in
// what BLAS says is not read. The tolerance is the rounding bound of a float sum of the same
// products: (terms + 4) * 2^-23 * sum |products|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "functional/detail/gemm.hpp"
#include "functional/detail/gemm_kernels.hpp"
#include "functional/reference/gemm.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

using detail::Trans;
using test::for_each_simd_target;
using test::random_vector;

struct Case {
  std::int64_t m, n, k;
  float alpha, beta;
};

// Runs `product` (sgemm_packed or sgemm) on one case and checks every element of C, and that the
// padding between rows is untouched.
template <class Product>
void check_case(const Case& c, Trans ta, Trans tb, Product product) {
  SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
               " ta " + std::to_string(ta == Trans::yes) + " tb " +
               std::to_string(tb == Trans::yes) + " alpha " + std::to_string(c.alpha) + " beta " +
               std::to_string(c.beta));
  const std::int64_t lda = (ta == Trans::no ? c.k : c.m) + 3;
  const std::int64_t ldb = (tb == Trans::no ? c.n : c.k) + 1;
  const std::int64_t ldc = c.n + 2;
  const std::int64_t a_rows = ta == Trans::no ? c.m : c.k;
  const std::int64_t b_rows = tb == Trans::no ? c.k : c.n;
  auto a = random_vector(a_rows * lda, 11 + static_cast<std::uint64_t>(c.m), -1, 1);
  const auto b = random_vector(b_rows * ldb, 12 + static_cast<std::uint64_t>(c.n), -1, 1);
  auto got = random_vector(c.m * ldc, 13, -1, 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // With beta 0, C is not read; with alpha 0, A is not read.
  if (c.beta == 0.0f) {
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.n; ++j) got[i * ldc + j] = nan;
  }
  if (c.alpha == 0.0f && !a.empty()) a[0] = nan;
  const auto before = got;
  const auto want = reference::sgemm(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb,
                                     c.beta, before.data(), ldc);
  product(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, got.data(), ldc);
  const double terms = static_cast<double>(std::min<std::int64_t>(c.k, detail::kGemmKc)) + 4.0;
  int bad = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < ldc; ++j) {
      const float g = got[i * ldc + j];
      if (j >= c.n) {
        if (g != before[i * ldc + j] && bad++ < 5)
          ADD_FAILURE() << "padding written at " << i << "," << j;
        continue;
      }
      const double w = want.value[i * c.n + j];
      const double tol = terms * std::ldexp(1.0, -23) * want.magnitude[i * c.n + j] + 1e-30;
      if (!(std::fabs(g - w) <= tol) && bad++ < 5) {
        ADD_FAILURE() << "C(" << i << "," << j << ") = " << g << ", want " << w << " within "
                      << tol;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const std::int64_t m : {1, 2, 4, 5, 6, 7, 8, 11, 12, 13, 25, 193}) {
    for (const std::int64_t n : {1, 7, 8, 15, 16, 17, 31, 32, 33, 65}) {
      out.push_back({m, n, 37, 1.0f, 0.0f});
    }
  }
  for (const std::int64_t k : {1, 2, 255, 256, 257, 513}) out.push_back({13, 33, k, 1.0f, 1.0f});
  out.push_back({3, 2100, 19, 0.75f, 0.5f});  // past one packed block of columns
  out.push_back({64, 196, 64, -1.5f, 1.0f});
  out.push_back({200, 70, 300, 0.5f, -2.0f});
  out.push_back({9, 9, 9, 0.0f, 0.5f});   // alpha 0: C scaled, A not read
  out.push_back({9, 9, 9, 0.0f, 0.0f});   // alpha 0, beta 0: zeros
  out.push_back({9, 9, 0, 1.0f, 0.25f});  // k 0
  return out;
}

TEST(SimdParity, GemmPackedEveryTarget) {
  const auto all = cases();
  for_each_simd_target([&] {
    for (const auto& c : all) {
      for (const Trans ta : {Trans::no, Trans::yes}) {
        for (const Trans tb : {Trans::no, Trans::yes}) check_case(c, ta, tb, detail::sgemm_packed);
      }
    }
  });
}

// The product every op calls (OpenBLAS or the packed one, as sgemm chooses) meets the same bound.
TEST(SimdParity, GemmChosenProduct) {
  for (const auto& c : cases()) {
    for (const Trans ta : {Trans::no, Trans::yes}) {
      for (const Trans tb : {Trans::no, Trans::yes}) check_case(c, ta, tb, detail::sgemm);
    }
  }
  EXPECT_FALSE(detail::gemm_backend().empty());
}

// op(A) packed once (a layer's weight, detail::PackedA): the same panels as the per-call packing,
// so sgemm_packed_pre gives sgemm_packed's result bit for bit, and both meet the reference bound;
// the panels are read from an exact-size buffer (ASan sees any read past them) and A is not read.
TEST(SimdParity, GemmPrepackedAEveryTarget) {
  const auto all = cases();
  for_each_simd_target([&] {
    for (const auto& c : all) {
      for (const Trans ta : {Trans::no, Trans::yes}) {
        for (const Trans tb : {Trans::no, Trans::yes}) {
          const std::int64_t lda = (ta == Trans::no ? c.k : c.m) + 3;
          const std::int64_t a_rows = ta == Trans::no ? c.m : c.k;
          const auto a = random_vector(a_rows * lda, 11 + static_cast<std::uint64_t>(c.m), -1, 1);
          std::vector<float> panels(
              static_cast<std::size_t>(detail::sgemm_packed_a_size(c.m, c.k)));
          detail::sgemm_pack_a(ta, c.m, c.k, a.data(), lda, panels.data());
          // sgemm_packed's signature, A given only as its panels.
          const auto prepacked = [&](Trans, Trans tb_, std::int64_t m, std::int64_t n,
                                     std::int64_t k, float alpha, const float*, std::int64_t,
                                     const float* b, std::int64_t ldb, float beta, float* cc,
                                     std::int64_t ldc) {
            detail::sgemm_packed_pre(panels.data(), tb_, m, n, k, alpha, b, ldb, beta, cc, ldc);
          };
          check_case(c, ta, tb, prepacked);
          const std::int64_t ldb = (tb == Trans::no ? c.n : c.k) + 1;
          const auto b = random_vector((tb == Trans::no ? c.k : c.n) * ldb, 5, -1, 1);
          std::vector<float> want(static_cast<std::size_t>(c.m * c.n), 0.5f);
          std::vector<float> got = want;
          detail::sgemm_packed(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                               want.data(), c.n);
          detail::sgemm_packed_pre(panels.data(), tb, c.m, c.n, c.k, c.alpha, b.data(), ldb, c.beta,
                                   got.data(), c.n);
          EXPECT_EQ(got, want) << c.m << "x" << c.n << "x" << c.k;
        }
      }
    }
  });
}

// A PackedA made on one target and used on another with a different register tile falls back
// to packing per call: the result is still that target's sgemm.
TEST(SimdParity, GemmPackedAOnAnotherTarget) {
  const std::int64_t m = 29, n = 41, k = 300;
  const auto a = random_vector(m * k, 3, -1, 1);
  const auto b = random_vector(k * n, 4, -1, 1);
  const detail::PackedA packed(Trans::no, m, k, a.data(), k);  // the best target's tile
  for_each_simd_target([&] {
    std::vector<float> want(static_cast<std::size_t>(m * n), 0.0f);
    std::vector<float> got = want;
    detail::sgemm(Trans::no, Trans::no, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want.data(),
                  n);
    detail::sgemm_prepacked(packed, Trans::no, Trans::no, m, n, k, 1.0f, a.data(), k, b.data(), n,
                            0.0f, got.data(), n);
    EXPECT_EQ(got, want);
  });
  EXPECT_EQ(detail::PackedA().panels_for(m, k), nullptr);
  EXPECT_EQ(packed.panels_for(m + 1, k), nullptr);
}

TEST(SimdParity, GemmEmptyShapesTouchNothing) {
  for_each_simd_target([&] {
    std::vector<float> c(4, 7.0f);
    detail::sgemm_packed(Trans::no, Trans::no, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f,
                         c.data(), 2);
    detail::sgemm_packed(Trans::no, Trans::no, 2, 0, 3, 1.0f, nullptr, 3, nullptr, 0, 0.0f,
                         c.data(), 2);
    for (const float v : c) EXPECT_EQ(v, 7.0f);
  });
}

}  // namespace
}  // namespace cvattn
