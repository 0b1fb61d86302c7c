// The dispatched binary-op rows and column sums (functional/detail/elementwise_kernels.hpp)
// against their scalar reference twin on every SIMD target this build and CPU support: every
// op and stride pattern, lengths around the vector widths, in place, and the special values
// (NaN, +-inf, +-0, division by zero) that IEEE arithmetic defines. Both sides round the same
// operations in the same order, so they must agree exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "functional/detail/elementwise_kernels.hpp"
#include "functional/reference/elementwise.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

using detail::BinaryOp;
constexpr BinaryOp kOps[] = {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div};

void expect_same(float got, float want) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << got;
  } else {
    EXPECT_EQ(got, want);
  }
}

std::vector<float> values(std::size_t n, std::uint64_t seed, bool special) {
  test::Random rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(-10.0f, 10.0f);
  if (special) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const float s[] = {
        std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, -0.0f, 1e-40f, 3e38f};
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 5 == 0) v[i] = s[(i / 5) % 7];
    }
  }
  return v;
}

TEST(SimdParity, BinaryRowsEveryOpStrideAndLength) {
  const std::vector<float> a = values(1100, 1, true), b = values(1100, 2, true);
  test::for_each_simd_target([&] {
    for (const BinaryOp op : kOps) {
      for (const std::int64_t sa : {0, 1}) {
        for (const std::int64_t sb : {0, 1}) {
          for (const std::int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 65, 1000, 1097}) {
            SCOPED_TRACE(testing::Message() << "op " << static_cast<int>(op) << " sa " << sa
                                            << " sb " << sb << " n " << n);
            std::vector<float> got(static_cast<std::size_t>(n)), want(got.size());
            // From a[1], b[2]: unaligned loads; the scalar of a broadcast operand is a[1] or b[2].
            detail::binary_row(op, a.data() + 1, sa, b.data() + 2, sb, got.data(), n);
            reference::binary_row(op, a.data() + 1, sa, b.data() + 2, sb, want.data(), n);
            for (std::size_t i = 0; i < got.size(); ++i) expect_same(got[i], want[i]);
          }
        }
      }
    }
  });
}

// Several rows in one call: each row at its own offsets (here a broadcast pattern of a
// [3, 5, n] by [1, 5, 1] or [5, n] operand), against the reference row by row.
TEST(SimdParity, BinaryRowsBlockOfOffsets) {
  const std::vector<float> a = values(3 * 5 * 37, 5, true), b = values(5 * 37, 6, true);
  test::for_each_simd_target([&] {
    for (const BinaryOp op : kOps) {
      for (const std::int64_t sb : {0, 1}) {
        const std::int64_t n = 37, rows = 15;
        std::vector<std::int64_t> off_a, off_b;
        for (std::int64_t r = 0; r < rows; ++r) {
          off_a.push_back(r * n);
          off_b.push_back(sb == 0 ? r % 5 : (r % 5) * n);
        }
        std::vector<float> got(static_cast<std::size_t>(rows * n)), want(got.size());
        detail::binary_rows(op, a.data(), off_a.data(), 1, b.data(), off_b.data(), sb, got.data(),
                            n, rows);
        for (std::int64_t r = 0; r < rows; ++r) {
          const auto k = static_cast<std::size_t>(r);
          reference::binary_row(op, a.data() + off_a[k], 1, b.data() + off_b[k], sb,
                                want.data() + r * n, n);
        }
        for (std::size_t i = 0; i < got.size(); ++i) expect_same(got[i], want[i]);
      }
    }
  });
}

TEST(SimdParity, BinaryRowsInPlace) {
  const std::vector<float> a = values(301, 3, true), b = values(301, 4, false);
  test::for_each_simd_target([&] {
    for (const BinaryOp op : kOps) {
      std::vector<float> want(a.size()), into_a = a, into_b = b;
      const auto n = static_cast<std::int64_t>(a.size());
      reference::binary_row(op, a.data(), 1, b.data(), 1, want.data(), n);
      detail::binary_row(op, into_a.data(), 1, b.data(), 1, into_a.data(), n);
      detail::binary_row(op, a.data(), 1, into_b.data(), 1, into_b.data(), n);
      for (std::size_t i = 0; i < want.size(); ++i) {
        expect_same(into_a[i], want[i]);
        expect_same(into_b[i], want[i]);
      }
    }
  });
}

TEST(SimdParity, FillRowsEveryWidthWithAndWithoutValues) {
  // A row stride wider than the columns filled: what lies between rows must stay as it was.
  const std::int64_t stride = 70;
  const std::vector<float> v = values(9, 11, true);
  test::for_each_simd_target([&] {
    for (const bool with_values : {false, true}) {
      for (const std::int64_t rows : {1, 3, 9}) {
        for (const std::int64_t cols : {1, 5, 8, 15, 16, 17, 33, 64, 69}) {
          SCOPED_TRACE(testing::Message()
                       << "rows " << rows << " cols " << cols << " values " << with_values);
          std::vector<float> got = values(static_cast<std::size_t>(stride * rows + 3), 12, false);
          std::vector<float> want = got;
          const float* src = with_values ? v.data() : nullptr;
          detail::fill_rows(got.data() + 1, rows, cols, stride, src);
          reference::fill_rows(want.data() + 1, rows, cols, stride, src);
          for (std::size_t i = 0; i < got.size(); ++i) expect_same(got[i], want[i]);
        }
      }
    }
  });
}

TEST(SimdParity, WeightedSumRowsEveryWidthAndExpertCount) {
  // K from 0 (zeros) to 5, widths around the 4-vector block and the single vectors, unaligned
  // rows a stride apart, NaN, infinities and signed zeros among the values and the weights.
  const std::int64_t stride = 211;
  const std::vector<float> x = values(static_cast<std::size_t>(stride * 5 + 4), 21, true);
  const std::vector<float> w = values(6, 22, true);
  const std::vector<float> plain = {0.25f, -1.5f, 3.0f, -0.0f, 2.0f, 0.5f};
  test::for_each_simd_target([&] {
    for (const std::vector<float>* weights : {&plain, &w}) {
      for (const std::int64_t k : {0, 1, 2, 4, 5}) {
        for (const std::int64_t n : {1, 3, 8, 15, 16, 17, 31, 32, 63, 64, 65, 100, 129, 207}) {
          SCOPED_TRACE(testing::Message() << "k " << k << " n " << n);
          std::vector<float> got(static_cast<std::size_t>(n) + 2, 7.0f), want(got);
          detail::weighted_sum_rows(x.data() + 3, k, stride, weights->data(), got.data() + 1, n);
          reference::weighted_sum_rows(x.data() + 3, k, stride, weights->data(), want.data() + 1,
                                       n);
          for (std::size_t i = 0; i < got.size(); ++i) {
            expect_same(got[i], want[i]);
            if (!std::isnan(want[i]) && want[i] == 0.0f) {
              EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i;
            }
          }
        }
      }
    }
  });
}

TEST(SimdParity, ColumnSumsEveryWidthAndRowBlock) {
  // Rows past one block of kColumnRowBlock, a row stride wider than the columns summed.
  const std::int64_t stride = 203;
  for (const bool special : {false, true}) {
    const std::vector<float> x = values(static_cast<std::size_t>(stride * 300 + 8), 5, special);
    test::for_each_simd_target([&] {
      for (const std::int64_t rows : {1, 2, 127, 128, 129, 300}) {
        for (const std::int64_t n : {1, 5, 8, 16, 31, 64, 65, 130, 200}) {
          SCOPED_TRACE(testing::Message() << "rows " << rows << " n " << n);
          std::vector<double> got(static_cast<std::size_t>(n), 0.5), want(got);
          detail::column_sums(x.data() + 3, stride, rows, n, got.data());
          reference::column_sums(x.data() + 3, stride, rows, n, want.data());
          for (std::size_t i = 0; i < got.size(); ++i) {
            if (std::isnan(want[i])) {
              EXPECT_TRUE(std::isnan(got[i]));
            } else {
              EXPECT_EQ(got[i], want[i]);
            }
          }
        }
      }
    });
  }
}

}  // namespace
}  // namespace cvattn
