#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/conv.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};

TEST(BatchNorm, MatchesPyTorch) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("functional")) {
    if (fx.name().rfind("batch_norm_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    const bool affine = fx.params()["affine"].get<bool>();
    const Tensor y =
        F::batch_norm(fx.tensor("input"), fx.tensor("running_mean"), fx.tensor("running_var"),
                      affine ? fx.tensor("weight") : Tensor(),
                      affine ? fx.tensor("bias") : Tensor(), fx.params()["eps"].get<double>());
    EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol);
    ++cases;
  }
  EXPECT_GE(cases, 5) << "run tests/fixtures/functional.py";
}

TEST(BatchNorm, WorkedExample) {
  // (x - 1) / sqrt(4 + 0) * 2 + 3 = x: [1, 3] -> [3, 5].
  const Tensor x = Tensor::from_vector({2, 1}, {1, 3});
  const auto one = [](float v) { return Tensor::from_vector({1}, {v}); };
  EXPECT_TENSOR_NEAR(F::batch_norm(x, one(1), one(4), one(2), one(3), 0.0),
                     Tensor::from_vector({2, 1}, {3, 5}), kTol);
}

TEST(FoldBatchNorm, FoldedConvMatchesConvThenBatchNorm) {
  for (const char* name :
       {"functional/fold_batch_norm_with_bias", "functional/fold_batch_norm_no_bias"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(name);
    const Tensor conv_bias = fx.params()["bias"].get<bool>() ? fx.tensor("conv_bias") : Tensor();
    const auto [w, b] = F::fold_batch_norm(
        fx.tensor("conv_weight"), conv_bias, fx.tensor("running_mean"), fx.tensor("running_var"),
        fx.tensor("bn_weight"), fx.tensor("bn_bias"), fx.params()["eps"].get<double>());
    const Tensor y = F::conv2d(fx.tensor("input"), w, b, F::Conv2dOptions().padding(1));
    EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol);
  }
}

TEST(FoldBatchNorm, LeavesInputsUntouched) {
  const Tensor w = Tensor::full({2, 3}, 1.0f);
  const Tensor mean = Tensor::zeros({2}), var = Tensor::full({2}, 4.0f);
  const auto [fw, fb] = F::fold_batch_norm(w, {}, mean, var, {}, {}, 0.0);
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(fw[0], 0.5f);
  EXPECT_EQ(fb.shape(), (Shape{2}));
  EXPECT_EQ(fb[1], 0.0f);
}

TEST(BatchNorm, RejectsBadShapes) {
  const Tensor x = Tensor::zeros({2, 3, 4, 4});
  const Tensor c3 = Tensor::zeros({3});
  EXPECT_THAT(test::Call([&] { (void)F::batch_norm(x, Tensor::zeros({4}), c3, c3, c3); }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("batch_norm: tensor 'running_mean' expected shape [3], got [4]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::batch_norm(x, c3, c3, c3, Tensor::zeros({3, 1}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("batch_norm: tensor 'bias' expected shape [3]")));
  EXPECT_THAT(test::Call([&] { (void)F::batch_norm(Tensor::zeros({3}), c3, c3, c3, c3); }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "batch_norm: tensor 'input' expected [N, C, ...] (rank >= 2), got [3]")));
  EXPECT_THAT(
      test::Call([&] { (void)F::batch_norm(x, c3, c3, c3, c3, -1.0); }),
      ThrowsMessage<ValueError>(HasSubstr("batch_norm: eps must be finite and non-negative")));
  EXPECT_THAT(test::Call([&] {
                (void)F::fold_batch_norm(Tensor::zeros({4, 3}), {}, c3, c3, c3, c3);
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("fold_batch_norm: tensor 'running_mean' expected shape [4], got [3]")));
}

}  // namespace
}  // namespace cvattn
