// cvattn's packed matrix product (functional/detail/gemm_kernels.hpp) against its reference twin
// on every SIMD target this build and CPU support: every transpose pair, sizes around the register
// tiles (6 and 12 rows, 8 to 32 columns) and their edge tiles (thirds of the rows, one vector),
// the packed blocks (K around 256, N past 2048), strided rows, alpha and beta of every kind, NaN in
// what BLAS says is not read; the same for the product computed as its transpose, and for both
// with op(A) packed once. The tolerance is the rounding bound of a float sum of the same
// products: (terms + 4) * 2^-23 * sum |products|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <tuple>
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

// The reference of one case, computed once per program: every test and target below checks the
// same operands (the seeds depend only on the case), and the double sums are most of this
// program's time, above all under qemu's soft floating point (.ci/check-x86-cpus.sh).
const reference::GemmResult& reference_for(const Case& c, Trans ta, Trans tb,
                                           const std::vector<float>& a, std::int64_t lda,
                                           const std::vector<float>& b, std::int64_t ldb,
                                           const std::vector<float>& before, std::int64_t ldc) {
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, float, float, bool, bool>;
  static std::map<Key, reference::GemmResult> cache;
  const Key key{c.m, c.n, c.k, c.alpha, c.beta, ta == Trans::yes, tb == Trans::yes};
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache
             .emplace(key, reference::sgemm(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(),
                                            ldb, c.beta, before.data(), ldc))
             .first;
  }
  return it->second;
}

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
  const reference::GemmResult& want = reference_for(c, ta, tb, a, lda, b, ldb, before, ldc);
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

// C computed as its transpose (the product sgemm takes for C with few columns): every case above,
// whichever orientation sgemm would choose for it, and the [Cout, 49] products of 7x7 planes.
TEST(SimdParity, GemmSwappedEveryTarget) {
  auto all = cases();
  all.push_back({512, 49, 300, 1.0f, 1.0f});
  all.push_back({130, 49, 513, 0.5f, 0.0f});
  for_each_simd_target([&] {
    for (const auto& c : all) {
      for (const Trans ta : {Trans::no, Trans::yes}) {
        for (const Trans tb : {Trans::no, Trans::yes}) {
          check_case(c, ta, tb, detail::sgemm_packed_swapped);
        }
      }
    }
  });
}

// Where sgemm swaps: a conv's [Cout, 49] output on a 7x7 plane wastes a quarter of 512-bit
// vectors and an eighth of 256-bit ones, so those targets swap; its transpose, and a 56x56
// plane's [64, 3136], do not.
TEST(SimdParity, GemmSwapsWhereColumnsAreFew) {
  for_each_simd_target([&] {
    SCOPED_TRACE(detail::sgemm_packed_cols());
    EXPECT_EQ(detail::sgemm_packed_swaps(512, 49, 4608), detail::sgemm_packed_cols() >= 16);
    EXPECT_FALSE(detail::sgemm_packed_swaps(49, 512, 4608));
    EXPECT_FALSE(detail::sgemm_packed_swaps(64, 3136, 576));
    EXPECT_FALSE(detail::sgemm_packed_swaps(0, 49, 576));
    EXPECT_FALSE(detail::sgemm_packed_swaps(512, 49, 0));
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

// sgemm_packed_wide (SgemmPackedWide) returns a preference, not a product: whether the target in
// use has 512-bit vectors, where sgemm takes the packed product over an OpenBLAS without AVX-512
// kernels (it asks only in such builds, with CVATTN_GEMM unset). Its value, called directly on
// every target: true on Highway's AVX-512 targets (AVX3*, AVX10), false on the others (also on
// SVE, whose CPUs run this source's NEON code). Then sgemm, whichever product the preference
// picks, against the reference twin on every target, on odd M, N and K (K no multiple of any
// vector width, one past a packed block), within check_case's bound.
TEST(SimdParity, GemmPackedWideEveryTarget) {
  const Case odd[] = {{7, 13, 37, 1.0f, 0.0f},
                      {13, 33, 257, 0.5f, 1.0f},
                      {31, 17, 19, -1.0f, 0.25f},
                      {1, 65, 3, 1.0f, 0.0f},
                      {193, 9, 129, 1.0f, 1.0f}};
  for_each_simd_target([&] {
    const std::string target = cvattn::simd::current_target();
    const bool avx512 = target.rfind("avx3", 0) == 0 || target.rfind("avx10", 0) == 0;
    EXPECT_EQ(detail::sgemm_packed_wide(), avx512) << target;
    for (const Case& c : odd) {
      for (const Trans ta : {Trans::no, Trans::yes}) {
        for (const Trans tb : {Trans::no, Trans::yes}) check_case(c, ta, tb, detail::sgemm);
      }
    }
  });
}

// Packed panels in an exact-size, 64-byte aligned buffer, as PackedA keeps them: ASan sees any
// read past them.
struct AlignedDelete {
  void operator()(float* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
};
using Panels = std::unique_ptr<float[], AlignedDelete>;

// A product on op(A) packed once (`pack_size`, `pack`), multiplied by `pre`, on every target:
// within the reference bound, and bit for bit the result of `per_call`, the product that packs A
// on every call; A is not read.
template <class PackSize, class Pack, class Pre, class PerCall>
void check_prepacked(const std::vector<Case>& all, PackSize pack_size, Pack pack, Pre pre,
                     PerCall per_call) {
  for_each_simd_target([&] {
    for (const auto& c : all) {
      for (const Trans ta : {Trans::no, Trans::yes}) {
        for (const Trans tb : {Trans::no, Trans::yes}) {
          const std::int64_t lda = (ta == Trans::no ? c.k : c.m) + 3;
          const std::int64_t a_rows = ta == Trans::no ? c.m : c.k;
          const auto a = random_vector(a_rows * lda, 11 + static_cast<std::uint64_t>(c.m), -1, 1);
          const auto floats =
              static_cast<std::size_t>(std::max<std::int64_t>(pack_size(c.m, c.k), 1));
          const Panels panels(
              static_cast<float*>(::operator new[](floats * sizeof(float), std::align_val_t{64})));
          pack(ta, c.m, c.k, a.data(), lda, panels.get());
          // The product's signature, A given only as its panels.
          const auto prepacked = [&](Trans, Trans tb_, std::int64_t m, std::int64_t n,
                                     std::int64_t k, float alpha, const float*, std::int64_t,
                                     const float* b, std::int64_t ldb, float beta, float* cc,
                                     std::int64_t ldc) {
            pre(panels.get(), tb_, m, n, k, alpha, b, ldb, beta, cc, ldc);
          };
          check_case(c, ta, tb, prepacked);
          const std::int64_t ldb = (tb == Trans::no ? c.n : c.k) + 1;
          const auto b = random_vector((tb == Trans::no ? c.k : c.n) * ldb, 5, -1, 1);
          std::vector<float> want(static_cast<std::size_t>(c.m * c.n), 0.5f);
          std::vector<float> got = want;
          per_call(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                   want.data(), c.n);
          pre(panels.get(), tb, c.m, c.n, c.k, c.alpha, b.data(), ldb, c.beta, got.data(), c.n);
          EXPECT_EQ(got, want) << c.m << "x" << c.n << "x" << c.k;
        }
      }
    }
  });
}

// op(A) packed once (a layer's weight, detail::PackedA): the same panels as the per-call packing.
TEST(SimdParity, GemmPrepackedAEveryTarget) {
  check_prepacked(cases(), detail::sgemm_packed_a_size, detail::sgemm_pack_a,
                  detail::sgemm_packed_pre, detail::sgemm_packed);
}

// op(A)ᵀ packed once for the swapped product (PackedA's transposed form).
TEST(SimdParity, GemmPrepackedTransposedEveryTarget) {
  auto all = cases();
  all.push_back({130, 49, 513, 0.5f, 1.0f});
  check_prepacked(all, detail::sgemm_packed_at_size, detail::sgemm_pack_at,
                  detail::sgemm_packed_pre_swapped, detail::sgemm_packed_swapped);
}

// A PackedA made on one target and used on another with a different register tile, or in the
// other form than sgemm takes for the shape, falls back to packing per call: the result is still
// that target's sgemm, bit for bit. Both shapes, one product sgemm swaps on 256- and 512-bit
// targets and one it does not, with both forms.
TEST(SimdParity, GemmPackedAOnAnotherTarget) {
  struct Shape3 {
    std::int64_t m, n, k;
  };
  using Form = detail::PackedA::Form;
  for (const Shape3 s : {Shape3{29, 41, 300}, Shape3{200, 49, 300}}) {
    const auto a = random_vector(s.m * s.k, 3, -1, 1);
    const auto b = random_vector(s.k * s.n, 4, -1, 1);
    for (const Form form : {Form::rows, Form::transposed}) {
      const detail::PackedA packed(Trans::no, s.m, s.k, a.data(), s.k, form);  // the best target's
      for_each_simd_target([&] {
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + " form " +
                     std::to_string(form == Form::transposed));
        std::vector<float> want(static_cast<std::size_t>(s.m * s.n), 0.25f);
        std::vector<float> got = want;
        detail::sgemm(Trans::no, Trans::no, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 1.0f,
                      want.data(), s.n);
        detail::sgemm_prepacked(packed, Trans::no, Trans::no, s.m, s.n, s.k, 1.0f, a.data(), s.k,
                                b.data(), s.n, 1.0f, got.data(), s.n);
        EXPECT_EQ(got, want);
      });
      EXPECT_EQ(packed.panels_for(s.m + 1, s.k), nullptr);
    }
  }
  EXPECT_EQ(detail::PackedA().panels_for(29, 300), nullptr);
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
