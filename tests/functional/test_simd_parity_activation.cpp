// The dispatched elementwise activations (functional/detail/activation_kernels.hpp) against their
// scalar reference twin on every SIMD target this build and CPU support: random values over the
// whole useful range, every length around the vector widths (the padded tail), and the special
// values (NaN, +-inf, +-0, the exp clamp at +-88, denormals) that PyTorch defines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "functional/detail/activation_kernels.hpp"
#include "functional/reference/activation.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

constexpr ActLayer kActs[] = {ActLayer::identity,     ActLayer::relu,      ActLayer::relu6,
                              ActLayer::sigmoid,      ActLayer::tanh,      ActLayer::silu,
                              ActLayer::gelu,         ActLayer::gelu_tanh, ActLayer::hard_swish,
                              ActLayer::hard_sigmoid, ActLayer::mish};

void expect_close(float got, float want, float x, ActLayer act) {
  const std::string what = std::string(to_string(act)) + "(" + std::to_string(x) + ")";
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " = " << got;
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
  } else {
    // A few float ulp of the transcendental functions, relative to the value or to 1.
    EXPECT_NEAR(got, want, 2e-6 * (1.0 + std::fabs(want))) << what;
  }
}

TEST(SimdParity, ActivationsRandomAndTails) {
  test::Random rng(20261201);
  std::vector<float> x(5003);
  for (float& v : x) v = rng.uniform(-12.0f, 12.0f);
  test::for_each_simd_target([&] {
    for (const ActLayer act : kActs) {
      for (const std::int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 65, 1000, 5002}) {
        std::vector<float> got(static_cast<std::size_t>(n)), want(got.size());
        // From x[1]: unaligned loads.
        detail::activation_kernel(act, x.data() + 1, got.data(), n);
        reference::activation_kernel(act, x.data() + 1, want.data(), n);
        for (std::int64_t i = 0; i < n; ++i) {
          expect_close(got[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)],
                       x[static_cast<std::size_t>(i + 1)], act);
        }
      }
    }
  });
}

TEST(SimdParity, ActivationsSpecialValues) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {std::numeric_limits<float>::quiet_NaN(),
                                inf,
                                -inf,
                                0.0f,
                                -0.0f,
                                88.0f,
                                -88.0f,
                                89.0f,
                                -89.0f,
                                100.0f,
                                -100.0f,
                                1e30f,
                                -1e30f,
                                1e-40f,
                                -1e-40f,
                                -3.0f,
                                3.0f,
                                6.0f,
                                20.0f,
                                4.5f,
                                -4.5f,
                                9.5f,
                                -9.5f};
  test::for_each_simd_target([&] {
    for (const ActLayer act : kActs) {
      std::vector<float> got(x.size()), in_place = x;
      detail::activation_kernel(act, x.data(), got.data(), static_cast<std::int64_t>(x.size()));
      detail::activation_kernel(act, in_place.data(), in_place.data(),
                                static_cast<std::int64_t>(x.size()));
      for (std::size_t i = 0; i < x.size(); ++i) {
        expect_close(got[i], reference::activation(act, x[i]), x[i], act);
        EXPECT_EQ(std::isnan(got[i]), std::isnan(in_place[i]));
        if (!std::isnan(got[i])) {
          EXPECT_EQ(got[i], in_place[i]);
        }
      }
    }
  });
}

}  // namespace
}  // namespace cvattn
