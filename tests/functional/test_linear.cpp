#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/linear.hpp"
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

TEST(Linear, MatchesPyTorch) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("functional")) {
    if (fx.name().rfind("linear_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    const Tensor bias = fx.params()["bias"].get<bool>() ? fx.tensor("bias") : Tensor();
    EXPECT_TENSOR_NEAR(F::linear(fx.tensor("input"), fx.tensor("weight"), bias),
                       fx.tensor("output"), kTol);
    ++cases;
  }
  EXPECT_GE(cases, 5) << "run tests/fixtures/functional.py";
}

TEST(Linear, WorkedExample) {
  // [1, 2] @ [[1, 0], [1, 1], [0, 2]]^T + [0, 1, -1] = [1, 4, 3].
  const Tensor x = Tensor::from_vector({1, 2}, {1, 2});
  const Tensor w = Tensor::from_vector({3, 2}, {1, 0, 1, 1, 0, 2});
  const Tensor b = Tensor::from_vector({3}, {0, 1, -1});
  EXPECT_TENSOR_NEAR(F::linear(x, w, b), Tensor::from_vector({1, 3}, {1, 4, 3}), kTol);
}

TEST(Linear, SplitsRowsOrFeaturesOverThreads) {
  // Many rows (split by rows) and one row with many features (split by features) give the
  // same values as a direct sum.
  for (const Shape& shape : {Shape{300, 40}, Shape{1, 40}}) {
    const Tensor x = test::random_tensor(shape, 1);
    const Tensor w = test::random_tensor({200, 40}, 2);
    const Tensor b = test::random_tensor({200}, 3);
    const Tensor y = F::linear(x, w, b);
    for (std::int64_t r = 0; r < shape[0]; r += 17) {
      for (std::int64_t o = 0; o < 200; o += 13) {
        double acc = b[o];
        for (std::int64_t k = 0; k < 40; ++k) acc += double(x[r * 40 + k]) * w[o * 40 + k];
        EXPECT_NEAR(y[r * 200 + o], acc, 1e-4) << r << ", " << o;
      }
    }
  }
}

TEST(Linear, RejectsBadShapes) {
  const Tensor w = Tensor::zeros({6, 9});
  EXPECT_THAT(test::Call([&] {
                (void)F::linear(Tensor::zeros({4, 8}), w);
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "linear: tensor 'input' expected last dimension 9 (weight [6, 9]), got [4, 8]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)F::linear(Tensor::zeros({4, 9}), w, Tensor::zeros({5}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("linear: tensor 'bias' expected shape [6], got [5]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::linear(Tensor::zeros({4, 9}), Tensor::zeros({54}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("linear: tensor 'weight' expected rank 2")));
}

}  // namespace
}  // namespace cvattn
