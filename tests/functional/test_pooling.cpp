#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/pooling.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using test::pair;
using test::ThreadScope;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};
constexpr test::Tolerance kExact{0, 0};

std::vector<test::Fixture> cases(const std::string& prefix) {
  return test::fixtures_in("functional", prefix);
}

TEST(MaxPool2d, MatchesPyTorch) {
  const auto fixtures = cases("max_pool2d_");
  ASSERT_GE(fixtures.size(), 13u) << "run tests/fixtures/functional.py";
  for (const auto& fx : fixtures) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    auto options = F::MaxPool2dOptions(pair(p["kernel_size"]))
                       .padding(pair(p["padding"]))
                       .dilation(pair(p["dilation"]))
                       .ceil_mode(p["ceil_mode"].get<bool>());
    if (!p["stride"].is_null()) options.stride(pair(p["stride"]));
    for (int threads : {1, 2}) {
      ThreadScope scope(threads);
      // Selection only: the result must be bit-exact.
      EXPECT_TENSOR_NEAR(F::max_pool2d(fx.tensor("input"), options), fx.tensor("output"), kExact);
    }
  }
}

TEST(AvgPool2d, MatchesPyTorch) {
  const auto fixtures = cases("avg_pool2d_");
  ASSERT_GE(fixtures.size(), 12u) << "run tests/fixtures/functional.py";
  for (const auto& fx : fixtures) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    auto options = F::AvgPool2dOptions(pair(p["kernel_size"]))
                       .padding(pair(p["padding"]))
                       .ceil_mode(p["ceil_mode"].get<bool>())
                       .count_include_pad(p["count_include_pad"].get<bool>());
    if (!p["stride"].is_null()) options.stride(pair(p["stride"]));
    if (!p["divisor_override"].is_null()) {
      options.divisor_override(p["divisor_override"].get<std::int64_t>());
    }
    for (int threads : {1, 2}) {
      ThreadScope scope(threads);
      EXPECT_TENSOR_NEAR(F::avg_pool2d(fx.tensor("input"), options), fx.tensor("output"), kTol);
    }
  }
}

TEST(AdaptivePool2d, MatchesPyTorch) {
  const auto fixtures = cases("adaptive_pool2d_");
  ASSERT_GE(fixtures.size(), 7u) << "run tests/fixtures/functional.py";
  for (const auto& fx : fixtures) {
    SCOPED_TRACE(fx.name());
    const Pair2 size = pair(fx.params()["output_size"]);
    const Tensor x = fx.tensor("input");
    for (int threads : {1, 2}) {
      ThreadScope scope(threads);
      EXPECT_TENSOR_NEAR(F::adaptive_avg_pool2d(x, size), fx.tensor("avg"), kTol);
      EXPECT_TENSOR_NEAR(F::adaptive_max_pool2d(x, size), fx.tensor("max"), kExact);
    }
    if (size == Pair2(1)) {
      EXPECT_TENSOR_NEAR(F::global_avg_pool2d(x), fx.tensor("avg"), kTol);
      EXPECT_TENSOR_NEAR(F::global_max_pool2d(x), fx.tensor("max"), kExact);
    }
  }
}

TEST(MaxPool2d, TwoByTwoWorkedExample) {
  // 4x4 -> 2x2, floor mode: each output is the max of its 2x2 block.
  const Tensor x = Tensor::from_vector({1, 1, 4, 4}, {1, 2, 5, 6,    //
                                                      3, 4, 7, 8,    //
                                                      -1, -2, 0, 9,  //
                                                      -3, -4, 1, 2});
  EXPECT_TENSOR_NEAR(F::max_pool2d(x, F::MaxPool2dOptions(2)),
                     Tensor::from_vector({1, 1, 2, 2}, {4, 8, -1, 9}), kExact);
}

TEST(MaxPool2d, PropagatesNaNAndIgnoresPadding) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector({1, 1, 2, 4}, {-5, nan, -7, -8,  //
                                                      -6, -9, -inf, -inf});
  const Tensor y = F::max_pool2d(x, F::MaxPool2dOptions(2).padding({0, 1}));
  // Windows: cols {pad, 0} -> -5; {1, 2} -> NaN; {3, pad} -> -8.
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 3}));
  EXPECT_EQ(y[0], -5.0f);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], -8.0f);
  const Tensor a = F::adaptive_max_pool2d(x, Pair2(1));
  EXPECT_TRUE(std::isnan(a[0]));
}

TEST(AvgPool2d, CountIncludePadWorkedExample) {
  // 2x2 ones, kernel 3, padding 1, stride 1: every window holds 4 ones among 9 cells.
  const Tensor x = Tensor::full({1, 1, 2, 2}, 1.0f);
  const auto options = F::AvgPool2dOptions(3).stride(1).padding(1);
  EXPECT_TENSOR_NEAR(F::avg_pool2d(x, options), Tensor::full({1, 1, 2, 2}, 4.0f / 9.0f), kTol);
  EXPECT_TENSOR_NEAR(F::avg_pool2d(x, F::AvgPool2dOptions(options).count_include_pad(false)),
                     Tensor::full({1, 1, 2, 2}, 1.0f), kTol);
  EXPECT_TENSOR_NEAR(F::avg_pool2d(x, F::AvgPool2dOptions(options).divisor_override(2)),
                     Tensor::full({1, 1, 2, 2}, 2.0f), kTol);
}

TEST(AdaptiveAvgPool2d, NonDivisibleCellsOverlap) {
  // 1x5 -> 1x3: columns [0, 2), [1, 4), [3, 5).
  const Tensor x = Tensor::from_vector({1, 1, 1, 5}, {1, 2, 3, 4, 5});
  EXPECT_TENSOR_NEAR(F::adaptive_avg_pool2d(x, {1, 3}),
                     Tensor::from_vector({1, 1, 1, 3}, {1.5f, 3.0f, 4.5f}), kTol);
  EXPECT_TENSOR_NEAR(F::adaptive_max_pool2d(x, {1, 3}),
                     Tensor::from_vector({1, 1, 1, 3}, {2, 4, 5}), kExact);
}

TEST(Pooling, UnbatchedInputKeepsRank3) {
  const Tensor x = test::random_tensor({3, 7, 6}, 5);
  EXPECT_EQ(F::max_pool2d(x, F::MaxPool2dOptions(2)).shape(), (Shape{3, 3, 3}));
  EXPECT_EQ(F::avg_pool2d(x, F::AvgPool2dOptions(3).stride(2).padding(1)).shape(),
            (Shape{3, 4, 3}));
  EXPECT_EQ(F::adaptive_avg_pool2d(x, {2, 5}).shape(), (Shape{3, 2, 5}));
  EXPECT_TENSOR_NEAR(F::global_avg_pool2d(x).reshape({3}),
                     F::global_avg_pool2d(x.reshape({1, 3, 7, 6})).reshape({3}), kExact);
}

TEST(Pooling, LargeBatchMatchesPerPlaneResults) {
  // Many planes split over threads give the same result as each plane alone.
  const Tensor x = test::random_tensor({4, 9, 13, 11}, 11);
  ThreadScope scope(3);
  const Tensor all = F::max_pool2d(x, F::MaxPool2dOptions(3).stride(2).padding(1));
  for (std::int64_t n = 0; n < 4; ++n) {
    const Tensor one =
        F::max_pool2d(x.slice0(n, n + 1), F::MaxPool2dOptions(3).stride(2).padding(1));
    EXPECT_TENSOR_NEAR(all.slice0(n, n + 1), one, kExact);
  }
}

TEST(Pooling, RejectsBadOptions) {
  const Tensor x = Tensor::zeros({1, 2, 6, 6});
  EXPECT_THAT(
      test::Call([&] { (void)F::max_pool2d(x, F::MaxPool2dOptions(0)); }),
      ThrowsMessage<ValueError>(HasSubstr("max_pool2d: kernel_size must be positive, got (0, 0)")));
  EXPECT_THAT(test::Call([&] {
                (void)F::max_pool2d(x, F::MaxPool2dOptions(2).stride({1, 0}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("max_pool2d: stride must be positive")));
  EXPECT_THAT(test::Call([&] { (void)F::max_pool2d(x, F::MaxPool2dOptions(3).padding(2)); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "max_pool2d: padding (2, 2) must be at most half of kernel_size (3, 3)")));
  EXPECT_THAT(test::Call([&] { (void)F::max_pool2d(x, F::MaxPool2dOptions(2).dilation(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("max_pool2d: dilation must be positive")));
  EXPECT_THAT(test::Call([&] {
                (void)F::avg_pool2d(x, F::AvgPool2dOptions(2).padding({0, -1}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("avg_pool2d: padding must be non-negative")));
  EXPECT_THAT(
      test::Call([&] { (void)F::avg_pool2d(x, F::AvgPool2dOptions(2).divisor_override(0)); }),
      ThrowsMessage<ValueError>(HasSubstr("avg_pool2d: divisor_override must be non-zero")));
  EXPECT_THAT(test::Call([&] {
                (void)F::adaptive_avg_pool2d(x, {0, 2});
              }),
              ThrowsMessage<ValueError>(
                  HasSubstr("adaptive_avg_pool2d: output_size must be positive, got (0, 2)")));
}

TEST(Pooling, RejectsKernelLargerThanInput) {
  EXPECT_THAT(test::Call([&] {
                (void)F::max_pool2d(Tensor::zeros({1, 2, 3, 8}), F::MaxPool2dOptions(4));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "max_pool2d: kernel_size (4, 4) with dilation (1, 1) and padding (0, 0) gives "
                  "an empty output (0, 2) for 'input' [1, 2, 3, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::avg_pool2d(Tensor::zeros({1, 2, 8, 3}), F::AvgPool2dOptions({2, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("avg_pool2d: kernel_size (2, 5)")));
}

TEST(Pooling, RejectsBadRanks) {
  EXPECT_THAT(test::Call([&] {
                (void)F::max_pool2d(Tensor::zeros({4, 4}), F::MaxPool2dOptions(2));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "max_pool2d: tensor 'input' expected [N, C, H, W] or [C, H, W], got [4, 4]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::global_avg_pool2d(Tensor::zeros({1, 2, 0, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("has an empty spatial size")));
  EXPECT_THAT(test::Call([&] {
                (void)F::adaptive_max_pool2d(Tensor(), {1, 1});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'input' is undefined")));
}

}  // namespace
}  // namespace cvattn
