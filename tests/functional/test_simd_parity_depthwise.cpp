// The dispatched depthwise tap kernels (functional/detail/depthwise_kernels.hpp) against their
// scalar reference twin on every SIMD target this build and CPU support: the phase split for
// every stride and padding parity, the tap sum for kernels 1..7, strides 1..3, dilation, several
// input channels, widths around the vector lengths and row ranges; then conv2d's depthwise
// path against the definition evaluated in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/functional/conv.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/detail/depthwise_kernels.hpp"
#include "functional/reference/depthwise_kernels.hpp"
#include "support/naive_conv.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using F::detail::ConvGeometry;
using F::detail::DepthwiseLayout;
using F::detail::kDepthwiseSlack;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

ConvGeometry geometry(std::int64_t cin_g, std::int64_t h, std::int64_t w, std::int64_t k, Pair2 s,
                      Pair2 p, Pair2 d) {
  ConvGeometry g{};
  g.n = 1, g.cin = cin_g, g.h = h, g.w = w, g.cout = 1, g.kh = k, g.kw = k;
  g.sh = s.h, g.sw = s.w, g.ph = p.h, g.pw = p.w, g.dh = d.h, g.dw = d.w;
  g.groups = 1, g.cin_g = cin_g, g.cout_g = 1;
  g.ho = (h + 2 * p.h - d.h * (k - 1) - 1) / s.h + 1;
  g.wo = (w + 2 * p.w - d.w * (k - 1) - 1) / s.w + 1;
  return g;
}

std::vector<float> random_vector(std::int64_t n, std::uint64_t seed) {
  test::Random rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = rng.uniform(-1.0f, 1.0f);
  return v;
}

std::string describe(const ConvGeometry& g) {
  return std::to_string(g.cin_g) + " x " + std::to_string(g.h) + "x" + std::to_string(g.w) + " k" +
         std::to_string(g.kh) + " s" + std::to_string(g.sh) + "," + std::to_string(g.sw) + " p" +
         std::to_string(g.ph) + "," + std::to_string(g.pw) + " d" + std::to_string(g.dh);
}

TEST(SimdParity, DepthwiseSplitEveryStrideAndPadding) {
  test::for_each_simd_target([] {
    std::uint64_t seed = 1;
    for (const Pair2 s : {Pair2{1, 1}, Pair2{2, 2}, Pair2{3, 3}, Pair2{2, 1}, Pair2{1, 2}}) {
      for (const std::int64_t pad : {0, 1, 2, 3}) {
        for (const std::int64_t h : {1, 2, 5, 14}) {
          for (const std::int64_t w : {1, 2, 3, 7, 16, 17, 33, 56}) {
            const ConvGeometry g = geometry(1, h, w, 1, s, {pad, pad + 1}, {1, 1});
            SCOPED_TRACE(describe(g));
            const DepthwiseLayout l = F::detail::depthwise_layout(g);
            const std::vector<float> src = random_vector(h * w, seed++);
            // NaN first: every float of the phases and the slack must be written, the slack
            // with zeros, and nothing past it.
            const auto size = static_cast<std::size_t>(l.plane_floats());
            std::vector<float> got(size + kDepthwiseSlack + 1, kNaN);
            std::vector<float> want(got.size(), 0.0f);
            want.back() = kNaN;
            F::detail::depthwise_split(l, src.data(), got.data());
            reference::depthwise_split(l, src.data(), want.data());
            for (std::size_t i = 0; i + 1 < got.size(); ++i) {
              ASSERT_EQ(got[i], want[i]) << "at " << i;
            }
            EXPECT_TRUE(std::isnan(got.back())) << "written past the slack";
          }
        }
      }
    }
  });
}

struct TapCase {
  std::int64_t cin_g, h, w, k;
  Pair2 s, p, d;
};

TEST(SimdParity, DepthwiseTapsEveryKernelStrideAndTail) {
  std::vector<TapCase> cases;
  for (const std::int64_t k : {3, 5}) {
    for (const std::int64_t s : {1, 2}) {
      // Output widths 1..40 cross every vector length and both tile widths' tails.
      for (const std::int64_t w : {1, 2, 5, 7, 8, 9, 14, 15, 16, 17, 23, 28, 31, 33, 56, 79}) {
        cases.push_back({1, 9, w, k, {s, s}, {k / 2, k / 2}, {1, 1}});
      }
      cases.push_back({1, 7, 7, k, {s, s}, {k / 2, k / 2}, {1, 1}});  // 7x7: one tile row
    }
  }
  for (const std::int64_t k : {1, 2, 4, 7})
    cases.push_back({1, 11, 13, k, {1, 1}, {k / 2, 1}, {1, 1}});
  cases.push_back({1, 12, 19, 3, {3, 3}, {1, 1}, {1, 1}});
  cases.push_back({1, 12, 19, 3, {2, 1}, {1, 2}, {1, 1}});
  cases.push_back({1, 17, 21, 3, {1, 1}, {2, 2}, {2, 2}});
  cases.push_back({1, 17, 21, 3, {2, 2}, {3, 1}, {3, 2}});
  cases.push_back({3, 15, 17, 3, {2, 2}, {1, 1}, {1, 1}});  // the stems' 27 taps
  cases.push_back({2, 10, 9, 5, {1, 1}, {2, 2}, {1, 1}});
  test::for_each_simd_target([&] {
    std::uint64_t seed = 1000;
    for (const TapCase& c : cases) {
      const ConvGeometry g = geometry(c.cin_g, c.h, c.w, c.k, c.s, c.p, c.d);
      SCOPED_TRACE(describe(g));
      const DepthwiseLayout l = F::detail::depthwise_layout(g);
      const std::vector<std::int64_t> offsets = F::detail::depthwise_offsets(g, l);
      const auto taps = static_cast<std::int64_t>(offsets.size());
      // The phases of every input channel, then the slack as NaN: what lanes past Wo read must
      // never reach an output.
      std::vector<float> scratch(
          static_cast<std::size_t>(c.cin_g * l.plane_floats() + kDepthwiseSlack), kNaN);
      for (std::int64_t ch = 0; ch < c.cin_g; ++ch) {
        const std::vector<float> src = random_vector(c.h * c.w, seed++);
        reference::depthwise_split(l, src.data(), scratch.data() + ch * l.plane_floats());
      }
      const std::vector<float> k = random_vector(taps, seed++);
      for (const float bias : {0.0f, 0.375f}) {
        // All rows, and a range that starts and ends inside the plane.
        for (const auto& [oy0, oy1] :
             {std::pair<std::int64_t, std::int64_t>{0, g.ho}, {g.ho / 3, g.ho - g.ho / 4}}) {
          const std::int64_t size = g.ho * g.wo;
          std::vector<float> got(static_cast<std::size_t>(size + 16), -7.0f);
          std::vector<float> want(got.size(), -7.0f);
          F::detail::depthwise_taps(l, offsets.data(), taps, k.data(), bias, scratch.data(),
                                    got.data(), oy0, oy1);
          reference::depthwise_taps(l, offsets.data(), taps, k.data(), bias, scratch.data(),
                                    want.data(), oy0, oy1);
          // Rounding of a sum of `taps` terms below 1 in magnitude, with or without FMA.
          const float tol = 6e-8f * static_cast<float>(taps * taps) + 1e-6f;
          for (std::size_t i = 0; i < got.size(); ++i) {
            if (std::isnan(want[i])) ADD_FAILURE() << "reference read the slack at " << i;
            ASSERT_NEAR(got[i], want[i], tol) << "at " << i << ", rows " << oy0 << ".." << oy1;
          }
        }
      }
    }
  });
}

TEST(SimdParity, GatherStride2ReadsOnlyItsElements) {
  test::for_each_simd_target([] {
    for (std::int64_t n = 0; n <= 70; ++n) {
      // Exactly the 2 n - 1 floats it may read, so a sanitizer catches any overread.
      const std::vector<float> src =
          random_vector(n > 0 ? 2 * n - 1 : 0, static_cast<std::uint64_t>(n));
      std::vector<float> got(static_cast<std::size_t>(n)), want(got.size());
      F::detail::gather_stride2(src.data(), got.data(), n);
      reference::gather_stride2(src.data(), want.data(), n);
      EXPECT_EQ(got, want) << "n = " << n;
    }
  });
}

TEST(SimdParity, Im2colStride2RowsReadOnlyTheirElements) {
  test::for_each_simd_target([] {
    std::uint64_t seed = 100;
    // lo and hi as the padding cuts them (0 < lo, hi < wo), whole rows, empty gathers.
    for (const std::int64_t wo : {1, 7, 28, 33}) {
      for (const std::int64_t lo : {std::int64_t{0}, std::min<std::int64_t>(1, wo)}) {
        for (const std::int64_t hi : {lo, std::max(lo, wo - 1), wo}) {
          for (const std::int64_t rows : {1, 3}) {
            // Row r reads src[r * step + 2 i + off] for lo <= i < hi: the last row's last read
            // is the buffer's end, so a sanitizer catches any overread.
            const std::int64_t off = -2 * lo + 1;
            const std::int64_t step = 2 * wo + 3;
            const std::int64_t need = hi > lo ? (rows - 1) * step + 2 * (hi - 1) + off + 1 : 0;
            const std::vector<float> src = random_vector(need, ++seed);
            const std::int64_t dst_step = wo + 2;
            std::vector<float> got(static_cast<std::size_t>((rows - 1) * dst_step + wo), -1.0f);
            std::vector<float> want = got;
            F::detail::im2col_stride2_rows(src.data(), step, got.data(), dst_step, lo, hi, wo, off,
                                           rows);
            reference::im2col_stride2_rows(src.data(), step, want.data(), dst_step, lo, hi, wo, off,
                                           rows);
            // The gaps between rows (dst_step > wo) stay untouched in both.
            EXPECT_EQ(got, want) << "wo " << wo << " lo " << lo << " hi " << hi << " rows " << rows;
          }
        }
      }
    }
  });
}

TEST(SimdParity, Conv2dDepthwiseAndStemMatchDefinition) {
  struct Case {
    Shape input, weight;
    std::int64_t stride, groups;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 5, 13, 11}, {5, 1, 3, 3}, 1, 5, true},  {{2, 5, 13, 11}, {5, 1, 3, 3}, 2, 5, false},
      {{1, 4, 14, 14}, {4, 1, 5, 5}, 1, 4, false}, {{1, 4, 15, 9}, {4, 1, 5, 5}, 2, 4, true},
      {{2, 3, 7, 7}, {6, 1, 5, 5}, 1, 3, true},    {{1, 3, 10, 19}, {9, 1, 3, 3}, 2, 3, false},
      {{2, 3, 23, 17}, {16, 3, 3, 3}, 2, 1, true}, {{1, 3, 22, 30}, {8, 3, 3, 3}, 2, 1, false},
  };
  std::uint64_t seed = 500;
  for (const Case& c : cases) {
    const Tensor x = test::random_tensor(c.input, seed++);
    const Tensor w = test::random_tensor(c.weight, seed++, -0.3f, 0.3f);
    const Tensor b = c.bias ? test::random_tensor({c.weight[0]}, seed++) : Tensor();
    const Pair2 pad{c.weight[2] / 2, c.weight[3] / 2};
    const Tensor want = test::naive_conv2d(x, w, b, c.stride, pad, 1, c.groups);
    test::for_each_simd_target([&] {
      SCOPED_TRACE(to_string(c.input) + " * " + to_string(c.weight));
      const auto options = F::Conv2dOptions().stride(c.stride).padding(pad).groups(c.groups);
      EXPECT_TENSOR_NEAR(F::conv2d(x, w, b, options), want, test::Tolerance{});
    });
  }
}

}  // namespace
}  // namespace cvattn
