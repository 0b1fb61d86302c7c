// The dispatched sparse/local attention products (functional/detail/sparse_kernels.hpp) against
// their reference twin (double sums) on every SIMD target this build and CPU support: window
// radii whose slot rows split into several register tiles, row widths and channel counts around
// the vector widths, rows at the image border, unaligned pointers, NaN.
//
// Bound: the kernels reassociate the sums (lanes, fused multiply-adds), so each output is held to
// the classical forward-error bound of an n-term float dot product in any order, with or without
// FMA, |fl(sum) - sum| <= gamma_n * sum |a_i b_i|, gamma_n = n u / (1 - n u), u = 2^-24, plus u
// times the same sum for the reference's own rounding to float; sum |a_i b_i| is the reference on
// the absolute values. For n = 64 that is ~4e-6 relative to sum |a_i b_i|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "functional/detail/sparse_kernels.hpp"
#include "functional/reference/sparse_kernels.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24
constexpr float kSentinel = 12345.0f;

double bound(std::int64_t terms, float abs_sum) {
  const double nu = static_cast<double>(terms) * kU;
  return (nu / (1.0 - nu) + kU) * abs_sum + 1e-37;
}

void expect_close(float got, float want, float abs_sum, std::int64_t terms) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << got;
    return;
  }
  EXPECT_LE(std::fabs(double{got} - want), bound(terms, abs_sum))
      << "got " << got << " want " << want << " sum|ab| " << abs_sum << " terms " << terms;
}

std::vector<float> values(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  test::Random rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

std::vector<float> absolute(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

// A map [C][H][W + 2D] of random values, zeros in the padding when zero_pad.
std::vector<float> padded_map(std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t D,
                              std::uint64_t seed, bool zero_pad) {
  const std::int64_t Wp = W + 2 * D;
  std::vector<float> m = values(static_cast<std::size_t>(C * H * Wp + 1), seed);
  if (zero_pad) {
    for (std::int64_t r = 0; r < C * H; ++r) {
      for (std::int64_t x = 0; x < Wp; ++x) {
        if (x < D || x >= D + W) m[static_cast<std::size_t>(1 + r * Wp + x)] = 0.0f;
      }
    }
  }
  return m;  // element 0 unused: the data starts unaligned at m.data() + 1
}

TEST(SparseKernelParity, LocalScoresRows) {
  constexpr std::int64_t H = 5;
  test::for_each_simd_target([&] {
    for (const std::int64_t D : {0, 1, 3, 4, 8}) {
      for (const std::int64_t C : {1, 3, 17}) {
        for (const std::int64_t W : {1, 3, 7, 8, 9, 16, 17, 33}) {
          const std::int64_t side = 2 * D + 1, K2 = side * side, Wp = W + 2 * D;
          const std::vector<float> q = values(static_cast<std::size_t>(C * H * W + 1), 3);
          const std::vector<float> k = padded_map(C, H, W, D, 4, false);
          const std::vector<float> qa = absolute(q), ka = absolute(k);
          for (const std::int64_t y : {std::int64_t{0}, std::int64_t{2}, H - 1}) {
            SCOPED_TRACE(testing::Message() << "D " << D << " C " << C << " W " << W << " y " << y);
            const std::int64_t dy_lo = std::max(-D, -y), dy_hi = std::min(D, H - 1 - y);
            const float* qy = q.data() + 1 + y * W;
            const float* ky = k.data() + 1 + y * Wp + D;
            std::vector<float> got(static_cast<std::size_t>(K2 * W), kSentinel), want(got),
                abs_sum(got);
            detail::local_scores_row(qy, H * W, ky, H * Wp, Wp, C, W, D, dy_lo, dy_hi, got.data());
            reference::local_scores_row(qy, H * W, ky, H * Wp, Wp, C, W, D, dy_lo, dy_hi,
                                        want.data());
            reference::local_scores_row(qa.data() + 1 + y * W, H * W, ka.data() + 1 + y * Wp + D,
                                        H * Wp, Wp, C, W, D, dy_lo, dy_hi, abs_sum.data());
            for (std::int64_t dy = -D; dy <= D; ++dy) {
              for (std::int64_t dx = -D; dx <= D; ++dx) {
                const std::int64_t slot = (dy + D) * side + dx + D;
                for (std::int64_t x = 0; x < W; ++x) {
                  const auto i = static_cast<std::size_t>(slot * W + x);
                  if (dy < dy_lo || dy > dy_hi) {
                    EXPECT_EQ(got[i], kSentinel) << "row outside the image written";
                  } else if (x + dx >= 0 && x + dx < W) {
                    expect_close(got[i], want[i], abs_sum[i], C);
                  }
                }
              }
            }
          }
        }
      }
    }
  });
}

TEST(SparseKernelParity, LocalWeightedSumRows) {
  constexpr std::int64_t H = 5;
  test::for_each_simd_target([&] {
    for (const std::int64_t D : {0, 1, 3, 4}) {
      for (const std::int64_t Cv : {1, 3, 8, 9, 19}) {
        for (const std::int64_t W : {1, 3, 7, 8, 9, 16, 17, 33}) {
          const std::int64_t side = 2 * D + 1, K2 = side * side, Wp = W + 2 * D;
          // Weights in [0, 1) everywhere, the padding's included (finite there, as the kernel
          // requires); the values' padding zeros.
          const std::vector<float> w = values(static_cast<std::size_t>(K2 * W + 1), 5, 0.0f, 1.0f);
          const std::vector<float> v = padded_map(Cv, H, W, D, 6, true);
          const std::vector<float> va = absolute(v);
          const std::int64_t out_cs = W + 3;
          for (const std::int64_t y : {std::int64_t{0}, std::int64_t{1}, H - 1}) {
            SCOPED_TRACE(testing::Message()
                         << "D " << D << " Cv " << Cv << " W " << W << " y " << y);
            const std::int64_t dy_lo = std::max(-D, -y), dy_hi = std::min(D, H - 1 - y);
            const float* vy = v.data() + 1 + y * Wp + D;
            std::vector<float> got(static_cast<std::size_t>(Cv * out_cs), kSentinel), want(got),
                abs_sum(got);
            detail::local_sum_row(w.data() + 1, vy, H * Wp, Wp, Cv, W, D, dy_lo, dy_hi, got.data(),
                                  out_cs);
            reference::local_sum_row(w.data() + 1, vy, H * Wp, Wp, Cv, W, D, dy_lo, dy_hi,
                                     want.data(), out_cs);
            reference::local_sum_row(w.data() + 1, va.data() + 1 + y * Wp + D, H * Wp, Wp, Cv, W, D,
                                     dy_lo, dy_hi, abs_sum.data(), out_cs);
            const std::int64_t terms = (dy_hi - dy_lo + 1) * side;
            for (std::int64_t c = 0; c < Cv; ++c) {
              for (std::int64_t x = 0; x < out_cs; ++x) {
                const auto i = static_cast<std::size_t>(c * out_cs + x);
                if (x >= W) {
                  EXPECT_EQ(got[i], kSentinel) << "written past the row";
                } else {
                  expect_close(got[i], want[i], abs_sum[i], terms);
                }
              }
            }
          }
        }
      }
    }
  });
}

TEST(SparseKernelParity, GatheredDotProducts) {
  constexpr std::int64_t S = 41;
  test::Random rng(7);
  std::vector<std::int32_t> idx(40);
  for (auto& j : idx) j = static_cast<std::int32_t>(rng.next() % S);
  idx[3] = 5;  // row 5 holds a NaN
  test::for_each_simd_target([&] {
    for (const std::int64_t E : {1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 64, 65, 100}) {
      const std::vector<float> q = values(static_cast<std::size_t>(E + 1), 8);
      std::vector<float> k = values(static_cast<std::size_t>(S * E + 1), 9);
      k[static_cast<std::size_t>(1 + 5 * E + E / 2)] = std::numeric_limits<float>::quiet_NaN();
      const std::vector<float> qa = absolute(q), ka = absolute(k);
      for (const std::int64_t count : {1, 2, 3, 4, 5, 7, 8, 9, 33, 40}) {
        SCOPED_TRACE(testing::Message() << "E " << E << " count " << count);
        std::vector<float> got(static_cast<std::size_t>(count)), want(got), abs_sum(got);
        detail::gathered_dots(q.data() + 1, k.data() + 1, E, idx.data(), count, got.data());
        reference::gathered_dots(q.data() + 1, k.data() + 1, E, idx.data(), count, want.data());
        reference::gathered_dots(qa.data() + 1, ka.data() + 1, E, idx.data(), count,
                                 abs_sum.data());
        for (std::size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], abs_sum[i], E);
      }
    }
  });
}

TEST(SparseKernelParity, GatheredWeightedSums) {
  constexpr std::int64_t S = 37;
  test::Random rng(10);
  std::vector<std::int32_t> idx(40);
  for (auto& j : idx) j = static_cast<std::int32_t>(rng.next() % S);
  idx[2] = 4;  // row 4 holds a NaN
  const std::vector<float> w = values(41, 11, 0.0f, 1.0f);
  test::for_each_simd_target([&] {
    for (const std::int64_t Ev : {1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 100, 130}) {
      std::vector<float> v = values(static_cast<std::size_t>(S * Ev + 1), 12);
      v[static_cast<std::size_t>(1 + 4 * Ev + Ev - 1)] = std::numeric_limits<float>::quiet_NaN();
      const std::vector<float> va = absolute(v);
      for (const std::int64_t count : {1, 3, 4, 32, 33, 40}) {
        SCOPED_TRACE(testing::Message() << "Ev " << Ev << " count " << count);
        std::vector<float> got(static_cast<std::size_t>(Ev + 1), kSentinel), want(got),
            abs_sum(got);
        detail::gathered_weighted_sum(w.data() + 1, v.data() + 1, Ev, idx.data(), count,
                                      got.data());
        reference::gathered_weighted_sum(w.data() + 1, v.data() + 1, Ev, idx.data(), count,
                                         want.data());
        reference::gathered_weighted_sum(w.data() + 1, va.data() + 1, Ev, idx.data(), count,
                                         abs_sum.data());
        for (std::int64_t c = 0; c < Ev; ++c) {
          const auto i = static_cast<std::size_t>(c);
          expect_close(got[i], want[i], abs_sum[i], count);
        }
        EXPECT_EQ(got.back(), kSentinel) << "written past the row";
      }
    }
  });
}

// select_keys' top-k scans: exact comparisons, so every target must give the reference's values
// and indices exactly. Values on a coarse grid (many ties), NaN and +-inf, lengths around the
// vector widths, bounds and thresholds at values present and absent, limits that stop a scan
// inside a vector, unaligned pointers, and the outputs' ends guarded.
TEST(SparseKernelParity, TopKScans) {
  const float inf = std::numeric_limits<float>::infinity();
  test::for_each_simd_target([&] {
    std::uint64_t seed = 70;
    for (const std::int64_t n : {0, 1, 3, 7, 15, 16, 17, 31, 33, 64, 100, 257, 1000}) {
      std::vector<float> s = values(static_cast<std::size_t>(n + 1), seed++, -4.0f, 4.0f);
      for (std::size_t j = 1; j < s.size(); ++j) {
        s[j] = std::round(s[j] * 2.0f) / 2.0f;  // ties
        if (j % 11 == 0) s[j] = std::numeric_limits<float>::quiet_NaN();
        if (j % 13 == 0) s[j] = (j % 2 != 0) ? inf : -inf;
      }
      const float* in = s.data() + 1;  // unaligned
      std::vector<float> vals(static_cast<std::size_t>(n + 2), kSentinel);
      std::vector<float> want_vals(static_cast<std::size_t>(n + 2), kSentinel);
      detail::nan_as_lowest(in, n, vals.data() + 1);
      reference::nan_as_lowest(in, n, want_vals.data() + 1);
      ASSERT_EQ(vals, want_vals) << "nan_as_lowest, n " << n;
      const float* v = vals.data() + 1;
      for (const float t : {-inf, -4.0f, -1.5f, -0.25f, 0.0f, 1.0f, 3.5f, 4.0f, inf}) {
        SCOPED_TRACE("n " + std::to_string(n) + " threshold " + std::to_string(t));
        std::vector<float> got(static_cast<std::size_t>(n + 1), kSentinel), want = got;
        const std::int64_t c = detail::values_at_least(v, n, t, got.data());
        EXPECT_EQ(c, reference::values_at_least(v, n, t, want.data()));
        EXPECT_EQ(got, want);
        for (const bool above : {true, false}) {
          for (const std::int64_t limit : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}, n}) {
            std::vector<std::int32_t> gi(static_cast<std::size_t>(limit + 1), -7), wi = gi;
            const std::int64_t k = detail::indices_where(v, n, t, above, gi.data(), limit);
            EXPECT_EQ(k, reference::indices_where(v, n, t, above, wi.data(), limit));
            EXPECT_EQ(gi, wi) << (above ? "above" : "equal") << ", limit " << limit;
          }
        }
      }
    }
  });
}

}  // namespace
}  // namespace cvattn
