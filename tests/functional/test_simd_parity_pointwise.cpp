// The dispatched pointwise convolution kernel (functional/detail/pointwise_kernels.hpp) against
// its scalar reference twin on every SIMD target this build and CPU support: every activation,
// channel counts around the register tile (6 rows; 2 to 5 left over, a tile of their own without
// an activation) and up to the kernel's limit, position counts
// around every vector length and tile width, strided rows, with and without bias; then conv2d's
// 1x1 path (the kernel up to the target's preferred input channels, the GEMM beyond: 112
// channels take the kernel on 512-bit targets and the GEMM on the others, 160 and 168 the GEMM
// everywhere) against the definition evaluated in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/conv.hpp"
#include "functional/detail/pointwise_kernels.hpp"
#include "functional/reference/pointwise_kernels.hpp"
#include "support/naive_conv.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using F::detail::kPointwiseMaxK;

TEST(SimdParity, PointwiseEveryActivationShapeAndTail) {
  const ActLayer acts[] = {ActLayer::identity,     ActLayer::relu,      ActLayer::relu6,
                           ActLayer::sigmoid,      ActLayer::tanh,      ActLayer::silu,
                           ActLayer::gelu,         ActLayer::gelu_tanh, ActLayer::hard_swish,
                           ActLayer::hard_sigmoid, ActLayer::mish};
  struct Case {
    std::int64_t m, k, n;
  };
  std::vector<Case> cases;
  for (const std::int64_t m : {1, 2, 3, 4, 5, 6, 7, 10, 13, 24}) {
    for (const std::int64_t n : {1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129}) {
      cases.push_back({m, 16, n});
    }
  }
  for (const std::int64_t k :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{24},
        std::int64_t{40}, std::int64_t{97}, kPointwiseMaxK})
    cases.push_back({7, k, 70});
  test::for_each_simd_target([&] {
    std::uint64_t seed = 1;
    for (const ActLayer act : acts) {
      for (const Case& c : cases) {
        for (const bool with_bias : {false, true}) {
          SCOPED_TRACE(std::string(to_string(act)) + " m " + std::to_string(c.m) + " k " +
                       std::to_string(c.k) + " n " + std::to_string(c.n) +
                       (with_bias ? " bias" : ""));
          // Rows of x and of the output longer than n: the kernel must keep to [0, n).
          const std::int64_t ldx = c.n + 3, ldo = c.n + 5;
          const float scale = 2.0f / std::sqrt(static_cast<float>(c.k + 1));
          const std::vector<float> w = test::random_vector(c.m * c.k, seed++, -scale, scale);
          const std::vector<float> x =
              test::random_vector(std::max<std::int64_t>(c.k, 1) * ldx, seed++, -2.0f, 2.0f);
          const std::vector<float> b = test::random_vector(c.m, seed++);
          const float* bias = with_bias ? b.data() : nullptr;
          std::vector<float> got(static_cast<std::size_t>(c.m * ldo), -7.0f);
          std::vector<float> want(got.size(), -7.0f);
          F::detail::pointwise_act(act, w.data(), c.m, c.k, x.data(), ldx, c.n, bias, got.data(),
                                   ldo);
          reference::pointwise_act(act, w.data(), c.m, c.k, x.data(), ldx, c.n, bias, want.data(),
                                   ldo);
          for (std::size_t i = 0; i < got.size(); ++i) {
            // FMA against separate rounding over k terms, then the activation's few ulp.
            const float tol = 1e-5f * (1.0f + std::abs(want[i])) +
                              2e-7f * static_cast<float>(c.k) * (1.0f + std::abs(want[i]));
            ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
          }
        }
      }
    }
  });
}

TEST(SimdParity, PointwisePreferredLimitWithinTheKernels) {
  test::for_each_simd_target([] {
    EXPECT_GE(F::detail::pointwise_preferred_max_k(), 16);
    EXPECT_LE(F::detail::pointwise_preferred_max_k(), kPointwiseMaxK);
  });
}

TEST(SimdParity, PointwiseRefusesTooManyInputChannels) {
  std::vector<float> w(kPointwiseMaxK + 1, 1.0f), x(kPointwiseMaxK + 1, 1.0f), out(1);
  EXPECT_THROW(F::detail::pointwise_act(ActLayer::identity, w.data(), 1, kPointwiseMaxK + 1,
                                        x.data(), 1, 1, nullptr, out.data(), 1),
               ValueError);
}

TEST(SimdParity, Conv2dPointwiseBothPathsMatchDefinition) {
  struct Case {
    Shape input;
    std::int64_t cout, groups;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 16, 9, 11}, 96, 1, true},
      {{1, 24, 7, 7}, 13, 1, false},
      {{3, 40, 5, 17}, 8, 1, true},
      {{1, 112, 7, 9}, 11, 1, true},
      {{1, kPointwiseMaxK, 6, 6}, 7, 1, true},
      {{1, kPointwiseMaxK + 8, 6, 6}, 7, 1, true},
      {{2, 12, 8, 9}, 18, 3, true},
      {{1, 2, 33, 1}, 5, 1, false},
  };
  std::uint64_t seed = 900;
  for (const Case& c : cases) {
    const Tensor x = test::random_tensor(c.input, seed++);
    const Tensor w =
        test::random_tensor({c.cout, c.input[1] / c.groups, 1, 1}, seed++, -0.3f, 0.3f);
    const Tensor b = c.bias ? test::random_tensor({c.cout}, seed++) : Tensor();
    const Tensor want = test::naive_conv2d(x, w, b, 1, {0, 0}, 1, c.groups);
    test::for_each_simd_target([&] {
      SCOPED_TRACE(to_string(c.input) + " -> " + std::to_string(c.cout));
      const auto options = F::Conv2dOptions().groups(c.groups);
      EXPECT_TENSOR_NEAR(F::conv2d(x, w, b, options), want, test::Tolerance{});
      // Fused activation: the kernel's epilogue against the activation of the definition.
      const F::Conv2dWeight prepared(w, options);
      Tensor relu6 = want.clone();
      for (std::int64_t i = 0; i < relu6.numel(); ++i) {
        relu6.data()[i] = std::min(std::max(relu6.data()[i], 0.0f), 6.0f);
      }
      EXPECT_TENSOR_NEAR(F::conv2d(x, prepared, b, ActLayer::relu6), relu6, test::Tolerance{});
    });
  }
}

}  // namespace
}  // namespace cvattn
