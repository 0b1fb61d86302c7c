// AffineGridGenerator against torch affine_grid and its autograd (tests/fixtures/stn_parts.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/modules/affine_grid_generator.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(AffineGridGenerator, MatchesTorch) {
  int seen = 0;
  for (const auto& fx : test::fixtures_in("stn_parts")) {
    if (fx.params().at("op") != "affine_grid_generator") continue;
    const auto size = fx.params().at("output_size");
    const Pair2 out(size[0].get<std::int64_t>(), size[1].get<std::int64_t>());
    const AffineGridGenerator gen(AffineGridGeneratorOptions().output_size(out).align_corners(
        fx.params().at("align_corners").get<bool>()));
    const Tensor theta = fx.tensor("theta");
    // The input it will sample has another size: the options' size wins.
    EXPECT_TENSOR_NEAR(gen.forward(theta, {theta.dim(0), 3, 19, 23}), fx.tensor("grid"),
                       test::Tolerance{})
        << fx.name();
    EXPECT_TENSOR_NEAR(gen.forward(theta), fx.tensor("grid"), test::Tolerance{}) << fx.name();
    EXPECT_TENSOR_NEAR(gen.backward(fx.tensor("grad_grid")), fx.tensor("grad_theta"),
                       test::Tolerance{})
        << fx.name();
    ++seen;
  }
  EXPECT_EQ(seen, 3);
}

TEST(AffineGridGenerator, InputSizedByDefault) {
  const Tensor theta = test::random_tensor({2, 2, 3}, 4);
  for (const bool ac : {false, true}) {
    const AffineGridGenerator gen(AffineGridGeneratorOptions().align_corners(ac));
    const Shape size{2, 5, 9, 4};
    EXPECT_EQ(gen.output_shape(size), size);
    EXPECT_TENSOR_NEAR(gen.forward(theta, size), functional::affine_grid(theta, size, ac),
                       (test::Tolerance{0, 0}));
    // One part set, the other from the input.
    const AffineGridGenerator half(AffineGridGeneratorOptions().output_size(Pair2(3, 0)));
    EXPECT_EQ(half.output_shape(size), (Shape{2, 5, 3, 4}));
  }
}

TEST(AffineGridGenerator, RejectsBadSizesAndTheta) {
  EXPECT_THAT(test::Call([] {
                AffineGridGenerator(AffineGridGeneratorOptions().output_size(Pair2(-1, 3)));
              }),
              ThrowsMessage<ValueError>(HasSubstr("output_size (-1, 3) must not be negative")));
  const AffineGridGenerator gen;
  EXPECT_THAT(test::Call([&] {
                (void)gen.forward(Tensor::zeros({1, 2, 3}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("pass the input's shape to forward")));
  EXPECT_THAT(
      test::Call([&] {
        (void)gen.forward(Tensor::zeros({1, 2, 3}), {1, 8, 8});
      }),
      ThrowsMessage<ShapeError>(HasSubstr("input size expected [N, C, H, W], got [1, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)gen.forward(Tensor::zeros({2, 3, 3}), {2, 1, 8, 8});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("theta")));
  EXPECT_THAT(test::Call([&] {
                (void)gen.forward(Tensor::zeros({2, 2, 3}), {1, 1, 8, 8});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("theta")));
  EXPECT_THAT(
      test::Call([&] {
        (void)gen.backward(Tensor::zeros({2, 4, 4, 3}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("AffineGridGenerator::backward: tensor 'grad_grid'")));
  EXPECT_THROW((void)gen.forward(Tensor(), {1, 1, 4, 4}), Error);
}

TEST(AffineGridGenerator, Describe) {
  EXPECT_EQ(AffineGridGenerator().describe(),
            "AffineGridGenerator(output_size=input, align_corners=False)");
  EXPECT_EQ(
      AffineGridGenerator(AffineGridGeneratorOptions().output_size(Pair2(7, 5)).align_corners(true))
          .describe(),
      "AffineGridGenerator(output_size=(7, 5), align_corners=True)");
  EXPECT_TRUE(AffineGridGenerator().state_dict().empty());
}

}  // namespace
}  // namespace cvattn
