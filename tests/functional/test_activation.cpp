#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cvattn/core/error.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/activation.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};
constexpr test::Tolerance kExact{0, 0};

TEST(Activation, MatchesPyTorchIncludingInfAndNaN) {
  const auto fx = test::fixture("functional/activation_elementwise");
  const Tensor x = fx.tensor("input");
  EXPECT_TENSOR_NEAR(F::relu(x), fx.tensor("relu"), kExact);
  EXPECT_TENSOR_NEAR(F::sigmoid(x), fx.tensor("sigmoid"), kTol);
  EXPECT_TENSOR_NEAR(F::tanh(x), fx.tensor("tanh"), kTol);
}

TEST(Activation, LargeTensorsSplitOverThreads) {
  const Tensor x = test::random_tensor({3, 50000}, 4, -8.0f, 8.0f);
  const Tensor y = F::sigmoid(x);
  for (std::int64_t i = 0; i < x.numel(); i += 997) {
    EXPECT_NEAR(y[i], 1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))), 1e-6) << i;
  }
}

TEST(Softmax, MatchesPyTorchOnEveryDim) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("functional")) {
    if (fx.name().rfind("softmax_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    const Tensor x = fx.tensor("input");
    for (const auto& d : fx.params()["dims"]) {
      const int dim = d.get<int>();
      const std::string tag = dim < 0 ? "m" + std::to_string(-dim) : std::to_string(dim);
      SCOPED_TRACE("dim " + std::to_string(dim));
      EXPECT_TENSOR_NEAR(F::softmax(x, dim), fx.tensor("softmax_dim" + tag), kTol);
      EXPECT_TENSOR_NEAR(F::log_softmax(x, dim), fx.tensor("log_softmax_dim" + tag), kTol);
    }
    ++cases;
  }
  EXPECT_GE(cases, 7) << "run tests/fixtures/functional.py";
}

TEST(Softmax, RowsSumToOneAndAreStable) {
  Tensor x = test::random_tensor({4, 3, 7}, 9, -50.0f, 50.0f);
  x[0] = 1e30f;  // would overflow exp without the max subtraction
  for (int dim : {0, 1, 2}) {
    const Tensor y = F::softmax(x, dim);
    ASSERT_TRUE(y.all_finite()) << dim;
  }
  const Tensor y = F::softmax(x, -1);
  for (std::int64_t r = 0; r < 12; ++r) {
    double sum = 0;
    for (std::int64_t k = 0; k < 7; ++k) sum += y[r * 7 + k];
    EXPECT_NEAR(sum, 1.0, 1e-6) << r;
  }
  EXPECT_EQ(y[0], 1.0f);
}

TEST(Softmax, WorkedExample) {
  // softmax([0, ln 3]) = [1/4, 3/4]; log_softmax = [-ln 4, ln 3 - ln 4].
  const Tensor x = Tensor::from_vector({2}, {0.0f, std::log(3.0f)});
  EXPECT_TENSOR_NEAR(F::softmax(x, 0), Tensor::from_vector({2}, {0.25f, 0.75f}), kTol);
  EXPECT_TENSOR_NEAR(F::log_softmax(x, -1),
                     Tensor::from_vector({2}, {-std::log(4.0f), std::log(0.75f)}), kTol);
}

TEST(Softmax, ChannelDimOfLargeImageSplitsColumns) {
  // [1, 5, 40, 40] over dim 1: inner 1600 columns cut into chunks, one outer slice.
  const Tensor x = test::random_tensor({1, 5, 40, 40}, 12, -5.0f, 5.0f);
  const Tensor y = F::softmax(x, 1);
  for (std::int64_t j = 0; j < 1600; j += 37) {
    double m = -1e30, sum = 0;
    for (int k = 0; k < 5; ++k) m = std::max(m, static_cast<double>(x[k * 1600 + j]));
    for (int k = 0; k < 5; ++k) sum += std::exp(x[k * 1600 + j] - m);
    for (int k = 0; k < 5; ++k) {
      EXPECT_NEAR(y[k * 1600 + j], std::exp(x[k * 1600 + j] - m) / sum, 1e-6);
    }
  }
}

TEST(Softmax, ScalarIsOne) {
  const Tensor x = Tensor::full({}, 3.0f);
  EXPECT_EQ(F::softmax(x, 0)[0], 1.0f);
  EXPECT_EQ(F::log_softmax(x, -1)[0], 0.0f);
}

TEST(Softmax, RejectsBadDim) {
  const Tensor x = Tensor::zeros({2, 3});
  EXPECT_THAT(test::Call([&] { (void)F::softmax(x, 2); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "softmax: dim 2 out of range for tensor 'x' [2, 3] (expected [-2, 1])")));
  EXPECT_THAT(test::Call([&] { (void)F::log_softmax(x, -3); }),
              ThrowsMessage<ValueError>(HasSubstr("log_softmax: dim -3 out of range")));
  EXPECT_THAT(test::Call([&] { (void)F::relu(Tensor()); }),
              ThrowsMessage<ShapeError>(HasSubstr("relu: tensor 'x' is undefined")));
}

}  // namespace
}  // namespace cvattn
