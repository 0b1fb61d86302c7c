// The attention path's runtime-dispatched kernels (softmax rows, transposes, the SDPA engine)
// against their reference twins (src/functional/reference/), on every SIMD target this build and
// CPU support, over sizes that hit every loop tail of 4-, 8- and 16-lane vectors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "functional/detail/sdpa_kernel.hpp"
#include "functional/detail/softmax.hpp"
#include "functional/detail/transpose.hpp"
#include "functional/reference/sdpa_kernel.hpp"
#include "functional/reference/softmax.hpp"
#include "functional/reference/transpose.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

using test::for_each_simd_target;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

using test::random_vector;

// The project's tolerance, 1e-4 + 1e-4*|ref|, with NaN matching NaN.
void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol + tol * std::fabs(want[i])) << "at " << i;
    }
  }
}

// Row lengths around the vector widths and their pairs (up to 32 floats on AVX-512).
const std::int64_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 49, 63, 64, 65, 196};

// --- softmax rows ---

// softmax2_numerator with every mask form, fewer allowed keys than n, and a known maximum:
// the normalised row (numerators times 1/sum) against the reference's.
TEST(SimdParityAttention, Softmax2Numerator) {
  for_each_simd_target([&] {
    for (const std::int64_t n : kSizes) {
      for (const int mask_kind : {0, 1, 2}) {  // none, one value for the row, per key
        for (const std::int64_t allowed : {n, (n + 1) / 2}) {
          for (const bool known : {false, true}) {
            if (known && mask_kind == 2) continue;  // only valid without a per-key mask
            SCOPED_TRACE("n = " + std::to_string(n) + ", mask " + std::to_string(mask_kind) +
                         ", allowed " + std::to_string(allowed) + (known ? ", known max" : ""));
            // An offset of one float makes the loads unaligned.
            const auto x0 =
                random_vector(n + 1, static_cast<std::uint64_t>(n) * 3 + 1, -6.0f, 6.0f);
            auto mask = random_vector(n + 1, static_cast<std::uint64_t>(n) * 3 + 2, -3.0f, 1.0f);
            if (n > 3) mask[3] = -kInf;  // a masked key
            const float* mp = mask_kind == 0 ? nullptr : mask.data() + 1;
            const std::int64_t step = mask_kind == 2 ? 1 : 0;
            std::vector<float> got(x0), want(x0);
            const float mx = reference::row_max(x0.data() + 1, std::min(allowed, n));
            const float inv = detail::softmax2_numerator(got.data() + 1, n, mp, step, allowed,
                                                         known ? &mx : nullptr);
            const float rinv = reference::softmax2_numerator(want.data() + 1, n, mp, step, allowed);
            for (std::int64_t j = 1; j <= n; ++j) {
              got[static_cast<std::size_t>(j)] *= inv;
              want[static_cast<std::size_t>(j)] *= rinv;
            }
            expect_close(got, want, 1e-5);
            EXPECT_EQ(got[0], x0[0]);  // nothing before the row is touched
          }
        }
      }
    }
  });
}

// Fully masked rows become zeros (1/sum 0), NaN rows NaN, +inf scores NaN like the plain softmax.
TEST(SimdParityAttention, Softmax2NumeratorNonFinite) {
  for_each_simd_target([&] {
    for (const std::int64_t n : {1, 5, 17, 40}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      std::vector<float> x(static_cast<std::size_t>(n), -kInf);
      EXPECT_EQ(detail::softmax2_numerator(x.data(), n, nullptr, 0, n), 0.0f);
      EXPECT_EQ(x, std::vector<float>(static_cast<std::size_t>(n), 0.0f));
      auto y = random_vector(n, 5, -1.0f, 1.0f);
      y[static_cast<std::size_t>(n / 2)] = kNaN;
      auto want = y;
      const float inv = detail::softmax2_numerator(y.data(), n, nullptr, 0, n);
      const float rinv = reference::softmax2_numerator(want.data(), n, nullptr, 0, n);
      for (std::size_t j = 0; j < y.size(); ++j) {
        y[j] *= inv;
        want[j] *= rinv;
      }
      EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(n / 2)]));
      EXPECT_TRUE(std::isnan(want[static_cast<std::size_t>(n / 2)]));
      // Keys beyond allowed are zeroed even when every allowed one is -inf.
      std::vector<float> z(static_cast<std::size_t>(n), 1.0f);
      z[0] = -kInf;
      EXPECT_EQ(detail::softmax2_numerator(z.data(), n, nullptr, 0, 1), 0.0f);
      EXPECT_EQ(z, std::vector<float>(static_cast<std::size_t>(n), 0.0f));
    }
  });
}

// The fast path with the maximum known: a common factor differs, the normalised row matches.
// Keys far below the maximum (more than 126 in log2 units) get ~0 weight.
TEST(SimdParityAttention, Softmax2NumeratorUnmasked) {
  for_each_simd_target([&] {
    for (const std::int64_t n : kSizes) {
      for (const float shift : {0.0f, 37.3f, -1000.5f}) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", shift " + std::to_string(shift));
        auto x0 = random_vector(n + 1, static_cast<std::uint64_t>(n) + 40, -8.0f, 8.0f);
        for (float& v : x0) v += shift;
        if (n > 4) x0[4] = shift - 200.0f;
        std::vector<float> got(x0), want(x0);
        const float mx = reference::row_max(x0.data() + 1, n);
        const float inv = detail::softmax2_numerator_unmasked(got.data() + 1, n, mx);
        const float rinv = reference::softmax2_numerator(want.data() + 1, n, nullptr, 0, n);
        for (std::int64_t j = 1; j <= n; ++j) {
          got[static_cast<std::size_t>(j)] *= inv;
          want[static_cast<std::size_t>(j)] *= rinv;
        }
        expect_close(got, want, 1e-5);
        EXPECT_EQ(got[0], x0[0]);
      }
    }
    // A non-finite maximum takes the general path.
    std::vector<float> inf_row = {1.0f, kInf, 0.0f};
    (void)detail::softmax2_numerator_unmasked(inf_row.data(), 3, kInf);
    EXPECT_TRUE(std::isnan(inf_row[1]));
  });
}

TEST(SimdParityAttention, SoftmaxRow) {
  for_each_simd_target([&] {
    for (const std::int64_t n : kSizes) {
      SCOPED_TRACE("n = " + std::to_string(n));
      const auto x0 = random_vector(n, static_cast<std::uint64_t>(n) + 7, -20.0f, 20.0f);
      const auto mask = random_vector(n, static_cast<std::uint64_t>(n) + 8, -2.0f, 2.0f);
      for (const std::int64_t allowed : {n, n - n / 3}) {
        std::vector<float> got(x0), want(x0);
        detail::softmax_row(got.data(), n, 0.37f, mask.data(), 1, allowed);
        reference::softmax_row(want.data(), n, 0.37f, mask.data(), 1, allowed);
        expect_close(got, want, 1e-5);
        got = x0;
        want = x0;
        detail::softmax_row(got.data(), n, 1.0f, nullptr, 0, allowed);
        reference::softmax_row(want.data(), n, 1.0f, nullptr, 0, allowed);
        expect_close(got, want, 1e-5);
      }
    }
  });
}

TEST(SimdParityAttention, AdditiveScore) {
  for_each_simd_target([&] {
    for (const std::int64_t n : kSizes) {
      SCOPED_TRACE("n = " + std::to_string(n));
      // Large |x + y| saturates tanh; small values test the absolute accuracy near 0.
      const auto x = random_vector(n, static_cast<std::uint64_t>(n) + 11, -12.0f, 12.0f);
      const auto y = random_vector(n, static_cast<std::uint64_t>(n) + 12, -0.5f, 0.5f);
      const auto v = random_vector(n, static_cast<std::uint64_t>(n) + 13, -1.0f, 1.0f);
      const float got = detail::additive_score(x.data(), y.data(), v.data(), n);
      const float want = reference::additive_score(x.data(), y.data(), v.data(), n);
      EXPECT_NEAR(got, want, 1e-5 + 1e-5 * std::fabs(want));
      // The row form: three keys of stride n + 1.
      const auto ys = random_vector(3 * (n + 1), static_cast<std::uint64_t>(n) + 14, -3.0f, 3.0f);
      float row[3];
      detail::additive_scores(x.data(), ys.data(), n + 1, v.data(), n, 3, row);
      for (std::int64_t s = 0; s < 3; ++s) {
        const float w = reference::additive_score(x.data(), ys.data() + s * (n + 1), v.data(), n);
        EXPECT_NEAR(row[s], w, 1e-5 + 1e-5 * std::fabs(w));
      }
    }
  });
}

TEST(SimdParityAttention, RowMaxAndScaling) {
  for_each_simd_target([&] {
    for (const std::int64_t n : kSizes) {
      SCOPED_TRACE("n = " + std::to_string(n));
      const auto x = random_vector(n + 1, static_cast<std::uint64_t>(n) + 21, -5.0f, 5.0f);
      EXPECT_EQ(detail::row_max(x.data() + 1, n), reference::row_max(x.data() + 1, n));
      std::vector<float> got(static_cast<std::size_t>(n + 2), 9.0f), want(got);
      detail::scale_into(x.data() + 1, n, -0.73f, got.data() + 1);
      reference::scale_into(x.data() + 1, n, -0.73f, want.data() + 1);
      EXPECT_EQ(got, want);  // one rounding, the same on every target; no write past n
      // In place, as softmax_row calls it.
      std::vector<float> in_place = x, in_place_want = x;
      detail::scale_into(in_place.data() + 1, n, 2.3f, in_place.data() + 1);
      reference::scale_into(in_place_want.data() + 1, n, 2.3f, in_place_want.data() + 1);
      EXPECT_EQ(in_place, in_place_want);
      detail::scale_add_into(x.data() + 1, n, 1.5f, got.data() + 1);
      reference::scale_add_into(x.data() + 1, n, 1.5f, want.data() + 1);
      // The twin rounds once; targets without a fused multiply-add (and tails the compiler does
      // not contract) round the product too, which moves the sum by at most
      // FLT_EPSILON * (|sum| + |product|). Nothing past n is written.
      for (std::size_t j = 0; j < got.size(); ++j) {
        const double product = j >= 1 && j <= static_cast<std::size_t>(n) ? x[j] * 1.5 : 0.0;
        const double tol = std::numeric_limits<float>::epsilon() *
                           (std::fabs(static_cast<double>(want[j])) + std::fabs(product));
        EXPECT_NEAR(got[j], want[j], tol) << "at " << j;
      }
    }
    EXPECT_EQ(detail::row_max(nullptr, 0), -kInf);
    const auto y = random_vector(301, 3, -5.0f, 5.0f);
    for (const std::int64_t block : {1, 3, 4, 17, 100}) {
      float want = kInf;
      for (std::int64_t b = 0; b < 300 / block; ++b) {
        want = std::min(want, reference::row_max(y.data() + b * block, block));
      }
      EXPECT_EQ(detail::min_of_block_maxima(y.data(), 300 / block, block), want) << block;
    }
  });
}

// --- transposes ---

// Shapes around the 4x4 and 8x8 register blocks, with odd remainders of rows and columns.
TEST(SimdParityAttention, Transpose) {
  test::Random rng(31);
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1}, {1, 9},   {9, 1},   {4, 4},    {8, 8},    {3, 5},
      {7, 9}, {16, 24}, {17, 33}, {196, 32}, {32, 196}, {49, 64}};
  for (int i = 0; i < 8; ++i) {
    shapes.emplace_back(1 + static_cast<std::int64_t>(rng.next() % 70),
                        1 + static_cast<std::int64_t>(rng.next() % 70));
  }
  for_each_simd_target([&] {
    for (const auto& [rows, cols] : shapes) {
      SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
      const auto x =
          random_vector(rows * cols, static_cast<std::uint64_t>(rows * 100 + cols), -1.0f, 1.0f);
      std::vector<float> got(static_cast<std::size_t>(rows * cols), 7.0f), want(got);
      detail::transpose(x.data(), got.data(), rows, cols);
      reference::transpose(x.data(), want.data(), rows, cols);
      EXPECT_EQ(got, want);
    }
  });
}

// --- the SDPA engine ---

struct SdpaCase {
  std::int64_t heads, L, S, E, Ev;
  int mask;  // 0 none, 1 per key (mask_cs 1), 2 one value per row (mask_cs 0)
  bool causal;
  int maps;  // 0 none, 1 per head, 2 averaged over groups of avg_group heads
  std::int64_t avg_group;
};

std::string describe(const SdpaCase& c) {
  return "heads " + std::to_string(c.heads) + ", L " + std::to_string(c.L) + ", S " +
         std::to_string(c.S) + ", E " + std::to_string(c.E) + ", Ev " + std::to_string(c.Ev) +
         ", mask " + std::to_string(c.mask) + (c.causal ? ", causal" : "") + ", maps " +
         std::to_string(c.maps) + " (group " + std::to_string(c.avg_group) + ")";
}

// Heads packed as column blocks of [L, heads * E] rows (the MHA layout: row stride heads * E plus
// one float of padding, so no row starts aligned), the mask shared by pairs of heads.
void check_sdpa(const SdpaCase& c, std::uint64_t seed) {
  SCOPED_TRACE(describe(c));
  const std::int64_t q_rs = c.heads * c.E + 1, k_rs = q_rs, v_rs = c.heads * c.Ev + 1;
  const std::int64_t out_rs = c.heads * c.Ev + 3;
  const auto q = random_vector(c.L * q_rs, seed, -2.0f, 2.0f);
  const auto k = random_vector(c.S * k_rs, seed + 1, -2.0f, 2.0f);
  const auto v = random_vector(c.S * v_rs, seed + 2, -1.0f, 1.0f);
  const std::int64_t mask_heads = (c.heads + 1) / 2;
  auto mask = random_vector(mask_heads * c.L * c.S, seed + 3, -3.0f, 1.0f);
  if (c.mask == 1) {
    for (std::int64_t i = 0; i < c.L; ++i)
      mask[static_cast<std::size_t>(i * c.S + (i * 7) % c.S)] = -kInf;
    if (c.L > 2) {  // a fully masked row: zero weights and output
      for (std::int64_t j = 0; j < c.S; ++j) mask[static_cast<std::size_t>(2 * c.S + j)] = -kInf;
    }
  }
  detail::SdpaPlan p;
  p.heads = c.heads;
  p.L = c.L;
  p.S = c.S;
  p.E = c.E;
  p.Ev = c.Ev;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.E));
  p.causal = c.causal;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.q_rs = q_rs;
  p.k_rs = k_rs;
  p.v_rs = v_rs;
  p.out_rs = out_rs;
  for (std::int64_t h = 0; h < c.heads; ++h) {
    p.q_off.push_back(h * c.E);
    p.k_off.push_back(h * c.E);
    p.v_off.push_back(h * c.Ev);
    p.out_off.push_back(h * c.Ev);
    p.mask_off.push_back((h / 2) * c.L * c.S);
  }
  if (c.mask != 0) {
    p.mask = mask.data();
    p.mask_rs = c.S;
    p.mask_cs = c.mask == 1 ? 1 : 0;
  }
  const std::int64_t map_rows = c.maps == 2 ? c.heads / c.avg_group : c.heads;
  std::vector<float> out(static_cast<std::size_t>(c.L * out_rs), 5.0f), rout(out);
  std::vector<float> maps(static_cast<std::size_t>(map_rows * c.L * c.S), 5.0f), rmaps(maps);
  detail::SdpaPlan r = p;
  p.out = out.data();
  r.out = rout.data();
  if (c.maps == 1) {
    p.weights = maps.data();
    r.weights = rmaps.data();
  } else if (c.maps == 2) {
    p.weights_avg = maps.data();
    r.weights_avg = rmaps.data();
    p.avg_group = r.avg_group = c.avg_group;
  }
  detail::run_sdpa(p);
  reference::run_sdpa(r);
  expect_close(out, rout);  // the padding between rows untouched (5 in both)
  if (c.maps != 0) expect_close(maps, rmaps);
}

// Every option over sizes around the panel widths (P = 8, 16 or 32 keys; last panels of 4, 8 or
// 16), E and Ev not multiples of 8, L not a multiple of the 6-row tiles, and a random sweep.
TEST(SimdParityAttention, Sdpa) {
  std::vector<SdpaCase> cases;
  for (const std::int64_t S : {1, 3, 4, 5, 9, 16, 17, 33, 49, 196}) {
    for (const int mask : {0, 1, 2}) {
      for (const bool causal : {false, true}) {
        for (const int maps : {0, 1, 2}) {
          cases.push_back({4, S == 196 ? 23 : 13, S, S == 196 ? 32 : 7, S == 196 ? 32 : 9, mask,
                           causal, maps, maps == 2 ? 2 : 1});
        }
      }
    }
  }
  // Value widths on each side of a half, one and two vectors of every target (the P·V tile
  // narrows to the panel's columns).
  for (const std::int64_t ev : {1, 2, 3, 4, 5, 8, 9, 12, 16, 17, 24, 32, 33, 48}) {
    cases.push_back({2, 7, 21, 8, ev, 0, false, 0, 1});
  }
  test::Random rng(41);
  for (int i = 0; i < 16; ++i) {
    const std::int64_t group = 1 + static_cast<std::int64_t>(rng.next() % 3);
    cases.push_back({group * (1 + static_cast<std::int64_t>(rng.next() % 2)),
                     1 + static_cast<std::int64_t>(rng.next() % 60),
                     1 + static_cast<std::int64_t>(rng.next() % 80),
                     1 + static_cast<std::int64_t>(rng.next() % 40),
                     1 + static_cast<std::int64_t>(rng.next() % 40),
                     static_cast<int>(rng.next() % 3), rng.next() % 2 == 0,
                     static_cast<int>(rng.next() % 3), group});
  }
  for_each_simd_target([&] {
    std::uint64_t seed = 100;
    for (const auto& c : cases) check_sdpa(c, seed += 10);
  });
}

}  // namespace
}  // namespace cvattn
