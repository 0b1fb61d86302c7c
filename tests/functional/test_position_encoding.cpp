// DETR sine position encoding (docs/modules.md §13), learned tables, Swin relative position bias.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/position_encoding.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace F = cvattn::functional;
using cvattn::Shape;
using cvattn::Tensor;
using cvattn::test::Tolerance;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(PositionEncodingSine, MatchesDetr) {
  int count = 0;
  for (const auto& fx : cvattn::test::fixtures_in("attention")) {
    if (fx.name().rfind("pos_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    ++count;
    const auto& p = fx.params();
    F::PositionEncodingOptions o;
    if (p.contains("temperature")) o.temperature(p["temperature"].get<double>());
    if (p.contains("normalize")) o.normalize(p["normalize"].get<bool>());
    if (p.contains("scale")) o.scale(p["scale"].get<double>());
    const Shape size = p["size"].get<Shape>();
    const Tensor mask = fx.has("mask") ? fx.tensor("mask") : Tensor();
    EXPECT_TENSOR_NEAR(F::position_encoding_sine(size, o, mask), fx.tensor("output"), Tolerance{});
  }
  EXPECT_EQ(count, 8);
}

// §13 worked example, normalize=false, pixel (1, 2) of an unpadded map, F = 4.
TEST(PositionEncodingSine, WorkedExampleRaw) {
  const Tensor pos =
      F::position_encoding_sine({1, 8, 3, 4}, F::PositionEncodingOptions().normalize(false));
  const float expected[8] = {0.909297f, -0.416147f, 0.019999f, 0.999800f,
                             0.141120f, -0.989992f, 0.029996f, 0.999550f};
  for (int c = 0; c < 8; ++c) EXPECT_NEAR(pos.at(0, c, 1, 2), expected[c], 1e-6) << "channel " << c;
}

// §13 worked example, normalize=true, H=2, W=3, pixel (0, 0).
TEST(PositionEncodingSine, WorkedExampleNormalized) {
  const Tensor pos = F::position_encoding_sine({1, 8, 2, 3});
  const float expected[8] = {0.0000016f, -1.000000f, 0.031411f, 0.999507f,
                             0.866026f,  -0.499999f, 0.020942f, 0.999781f};
  for (int c = 0; c < 8; ++c) EXPECT_NEAR(pos.at(0, c, 0, 0), expected[c], 1e-6) << "channel " << c;
}

// An empty size with one huge extent (a fuzzer found [4, 8, 21474836481, 0] looping for
// minutes) returns the empty table at once.
TEST(PositionEncodingSine, EmptySizeWithAHugeExtentReturnsAtOnce) {
  const std::int64_t huge = std::int64_t{1} << 34;
  const Tensor pos = F::position_encoding_sine({4, 8, huge, 0});
  EXPECT_EQ(pos.shape(), (cvattn::Shape{4, 8, huge, 0}));
  EXPECT_EQ(pos.numel(), 0);
  // N = 0 with a huge channel count: the frequency table is not sized by C either (the fuzzer's
  // [0, 92233720189036, 5, 7] asked for 184 TB).
  const std::int64_t channels = std::int64_t{1} << 46;
  const Tensor none = F::position_encoding_sine({0, channels, 5, 7});
  EXPECT_EQ(none.shape(), (cvattn::Shape{0, channels, 5, 7}));
  EXPECT_EQ(none.numel(), 0);
}

TEST(PositionEncodingSine, RejectsBadInput) {
  using cvattn::ShapeError;
  using cvattn::ValueError;
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::position_encoding_sine({1, 6, 2, 2});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("positive multiple of 4")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::position_encoding_sine({1, 8, 2});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("size expected [N, C, H, W], got [1, 8, 2]")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::position_encoding_sine(
                    {1, 8, 2, 2}, F::PositionEncodingOptions().normalize(false).scale(3.0));
              }),
              ThrowsMessage<ValueError>(HasSubstr("normalize should be true if scale is passed")));
  EXPECT_THAT(
      cvattn::test::Call([] {
        (void)F::position_encoding_sine({1, 8, 2, 2}, F::PositionEncodingOptions().temperature(0));
      }),
      ThrowsMessage<ValueError>(HasSubstr("temperature must be finite and positive")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::position_encoding_sine({2, 8, 2, 2}, {}, Tensor::zeros({1, 2, 2}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("tensor 'mask' expected shape [2, 2, 2], got [1, 2, 2]")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::position_encoding_sine({1, 8, 2, 2}, {}, Tensor::full({1, 2, 2}, 0.5f));
              }),
              ThrowsMessage<ValueError>(HasSubstr("must hold only 0 (valid) and 1 (padded)")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::position_encoding_sine({1, 8, -2, 2});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("negative")));
}

TEST(AddPositionEncoding, AddsTheTableToEverySample) {
  const Tensor x = cvattn::test::random_tensor({2, 3, 4, 5}, 1);
  const Tensor table = cvattn::test::random_tensor({3, 4, 5}, 2);
  for (const Tensor& t : {table, table.reshape({1, 3, 4, 5})}) {
    const Tensor y = F::add_position_encoding(x, t);
    for (std::int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y[i], x[i] + table[i % 60]);
  }
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::add_position_encoding(x, Tensor::zeros({3, 5, 4}));
              }),
              ThrowsMessage<cvattn::ShapeError>(
                  HasSubstr("tensor 'table' expected shape [3, 4, 5], got [3, 5, 4]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::add_position_encoding(x, Tensor::zeros({2, 3, 4, 5}));
              }),
              ThrowsMessage<cvattn::ShapeError>(HasSubstr("expected shape [1, 3, 4, 5]")));
}

TEST(RelativePositionBias, MatchesSwin) {
  int count = 0;
  for (const auto& fx : cvattn::test::fixtures_in("attention")) {
    if (fx.name().rfind("relbias_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    ++count;
    const auto win = fx.params()["window"].get<std::vector<std::int64_t>>();
    const cvattn::Pair2 window(win[0], win[1]);
    EXPECT_TENSOR_NEAR(F::relative_position_bias(fx.tensor("table"), window), fx.tensor("output"),
                       (Tolerance{0, 0}));
    const auto index = F::relative_position_index(window);
    const Tensor expected = fx.tensor("index");
    ASSERT_EQ(static_cast<std::int64_t>(index.size()), expected.numel());
    for (std::size_t i = 0; i < index.size(); ++i) EXPECT_EQ(index[i], expected[i]);
  }
  EXPECT_EQ(count, 3);
}

TEST(RelativePositionBias, RejectsBadInput) {
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::relative_position_bias(Tensor::zeros({24, 2}), cvattn::Pair2(3, 4));
              }),
              ThrowsMessage<cvattn::ShapeError>(HasSubstr(
                  "relative_position_bias: tensor 'table' expected [35, heads] ((2*3-1)*(2*4-1) "
                  "rows for a 3x4 window), got [24, 2]")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::relative_position_bias(Tensor::zeros({1, 2}), cvattn::Pair2(0, 1));
              }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("window must be in [1, 4096]")));
}
