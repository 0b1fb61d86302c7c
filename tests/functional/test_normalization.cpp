// layer_norm, layer_norm2d and group_norm against F.layer_norm, timm's LayerNorm2d and
// nn.GroupNorm (tests/fixtures/layers.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/normalization.hpp"
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

Tensor optional(const test::Fixture& fx, const std::string& name) {
  return fx.has(name) ? fx.tensor(name) : Tensor();
}

Shape shape_of(const nlohmann::json& j) { return j.get<Shape>(); }

TEST(LayerNorm, MatchesPyTorch) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("layers", "ln_")) {
    SCOPED_TRACE(fx.name());
    const Tensor y = F::layer_norm(fx.tensor("input"), shape_of(fx.params()["normalized_shape"]),
                                   optional(fx, "weight"), optional(fx, "bias"),
                                   fx.params()["eps"].get<double>());
    EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol);
    ++cases;
  }
  EXPECT_EQ(cases, 10);
}

TEST(LayerNorm, RowsAreNormalised) {
  const Tensor x = test::random_tensor({5, 384}, 2, -3.0f, 7.0f);
  const Tensor y = F::layer_norm(x, {384});
  for (std::int64_t r = 0; r < 5; ++r) {
    double s = 0, ss = 0;
    for (std::int64_t i = 0; i < 384; ++i) {
      s += y[r * 384 + i];
      ss += y[r * 384 + i] * y[r * 384 + i];
    }
    EXPECT_NEAR(s / 384, 0.0, 1e-6);
    EXPECT_NEAR(ss / 384, 1.0, 1e-3);  // var / (var + eps)
  }
}

TEST(LayerNorm, RejectsBadShapes) {
  const Tensor x = Tensor::zeros({2, 3, 4});
  EXPECT_THAT(test::Call([&] { (void)F::layer_norm(x, {3}); }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "layer_norm: tensor 'input' expected shape [*, 3] (normalized_shape), got "
                  "[2, 3, 4]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::layer_norm(x, {2, 3, 4, 1});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("normalized_shape")));
  EXPECT_THAT(test::Call([&] { (void)F::layer_norm(x, {4}, Tensor::zeros({3})); }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'weight' expected shape [4], got [3]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::layer_norm(x, {4}, {}, Tensor::zeros({1, 4}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'bias' expected shape [4]")));
  EXPECT_THAT(test::Call([&] { (void)F::layer_norm(x, {}); }),
              ThrowsMessage<ValueError>(HasSubstr("normalized_shape")));
  EXPECT_THAT(test::Call([&] { (void)F::layer_norm(x, {4}, {}, {}, -1.0); }),
              ThrowsMessage<ValueError>(HasSubstr("layer_norm: eps")));
  EXPECT_THAT(test::Call([] { (void)F::layer_norm(Tensor(), {4}); }),
              ThrowsMessage<ShapeError>(HasSubstr("layer_norm")));
}

TEST(LayerNorm2d, MatchesTimm) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("layers", "ln2d")) {
    SCOPED_TRACE(fx.name());
    const Tensor y = F::layer_norm2d(fx.tensor("input"), optional(fx, "weight"),
                                     optional(fx, "bias"), fx.params()["eps"].get<double>());
    EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol);
    ++cases;
  }
  EXPECT_EQ(cases, 3);
}

TEST(LayerNorm2d, EqualsLayerNormOverPermutedChannels) {
  const Tensor x = test::random_tensor({2, 7, 13, 11}, 9);  // 143 pixels: two tiles and a tail
  const Tensor w = test::random_tensor({7}, 10), b = test::random_tensor({7}, 11);
  const Tensor y = F::layer_norm2d(x, w, b, 1e-6);
  Tensor nhwc = Tensor::empty({2, 13, 11, 7});
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 7; ++c)
      for (std::int64_t p = 0; p < 143; ++p) nhwc[(n * 143 + p) * 7 + c] = x[(n * 7 + c) * 143 + p];
  const Tensor ref = F::layer_norm(nhwc, {7}, w, b, 1e-6);
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 7; ++c)
      for (std::int64_t p = 0; p < 143; ++p)
        EXPECT_NEAR(y[(n * 7 + c) * 143 + p], ref[(n * 143 + p) * 7 + c], 1e-5);
}

TEST(LayerNorm2d, RejectsBadShapes) {
  EXPECT_THAT(test::Call([] {
                (void)F::layer_norm2d(Tensor::zeros({2, 3, 4}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("input")));
  EXPECT_THAT(test::Call([] {
                (void)F::layer_norm2d(Tensor::zeros({2, 3, 4, 4}), Tensor::zeros({4}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("layer_norm2d: tensor 'weight' expected shape [3], got [4]")));
}

TEST(GroupNorm, MatchesPyTorch) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("layers", "gn_")) {
    SCOPED_TRACE(fx.name());
    const Tensor y = F::group_norm(fx.tensor("input"), fx.params()["num_groups"].get<int>(),
                                   optional(fx, "weight"), optional(fx, "bias"),
                                   fx.params()["eps"].get<double>());
    EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol);
    ++cases;
  }
  EXPECT_EQ(cases, 8);
}

TEST(GroupNorm, RejectsBadArguments) {
  const Tensor x = Tensor::zeros({2, 6, 4, 4});
  EXPECT_THAT(test::Call([&] { (void)F::group_norm(x, 4); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "group_norm: num_groups (4) must be positive and divide the channels (6)")));
  EXPECT_THAT(test::Call([&] { (void)F::group_norm(x, 0); }),
              ThrowsMessage<ValueError>(HasSubstr("(0)")));
  EXPECT_THAT(test::Call([] { (void)F::group_norm(Tensor::zeros({6}), 1); }),
              ThrowsMessage<ShapeError>(HasSubstr("rank >= 2")));
  EXPECT_THAT(test::Call([&] { (void)F::group_norm(x, 2, Tensor::zeros({2})); }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'weight' expected shape [6], got [2]")));
}

TEST(Normalization, EmptyTensorsGiveEmptyOutputs) {
  EXPECT_EQ(F::layer_norm(Tensor::zeros({0, 4}), {4}).shape(), (Shape{0, 4}));
  EXPECT_EQ(F::group_norm(Tensor::zeros({0, 4, 2}), 2).shape(), (Shape{0, 4, 2}));
  EXPECT_EQ(F::layer_norm2d(Tensor::zeros({1, 3, 0, 2})).shape(), (Shape{1, 3, 0, 2}));
}

TEST(Normalization, IsThreadSafe) {
  const Tensor x = test::random_tensor({4, 8, 9, 7}, 21);
  const Tensor ref_ln = F::layer_norm(x, {9, 7});
  const Tensor ref_gn = F::group_norm(x, 4);
  std::vector<std::thread> threads;
  std::vector<Tensor> ln(8), gn(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      ln[t] = F::layer_norm(x, {9, 7});
      gn[t] = F::group_norm(x, 4);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    EXPECT_TENSOR_NEAR(ln[t], ref_ln, kExact);
    EXPECT_TENSOR_NEAR(gn[t], ref_gn, kExact);
  }
}

}  // namespace
}  // namespace cvattn
