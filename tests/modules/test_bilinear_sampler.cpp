// BilinearSampler against torch grid_sample and its autograd (tests/fixtures/stn_parts.py): every
// mode, each with another padding mode and align_corners; 2 x 3 x 7 x 13 sampled on 5 x 9.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/bilinear_sampler.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = cvattn::functional;
using ::testing::HasSubstr;

BilinearSamplerOptions options_of(const test::Fixture& fx) {
  return BilinearSamplerOptions()
      .mode(F::parse_interpolation(fx.params().at("mode").get<std::string>()))
      .padding_mode(F::parse_padding_mode(fx.params().at("padding_mode").get<std::string>()))
      .align_corners(fx.params().at("align_corners").get<bool>());
}

TEST(BilinearSampler, MatchesTorchWithGradients) {
  int seen = 0;
  for (const auto& fx : test::fixtures_in("stn_parts")) {
    if (fx.params().at("op") != "bilinear_sampler") continue;
    const BilinearSampler sampler(options_of(fx));
    const Tensor x = fx.tensor("input"), grid = fx.tensor("grid");
    EXPECT_TENSOR_NEAR(sampler.forward(x, grid), fx.tensor("output"), test::Tolerance{})
        << fx.name();
    const F::GridSampleGrads g = sampler.backward(x, grid, fx.tensor("grad_output"));
    EXPECT_TENSOR_NEAR(g.grad_input, fx.tensor("grad_input"), test::Tolerance{}) << fx.name();
    EXPECT_TENSOR_NEAR(g.grad_grid, fx.tensor("grad_grid"), test::Tolerance{}) << fx.name();
    ++seen;
  }
  EXPECT_EQ(seen, 5);
}

TEST(BilinearSampler, RejectsMismatchedShapes) {
  const BilinearSampler sampler;
  EXPECT_THAT(test::Call([&] {
                (void)sampler.forward(Tensor::zeros({2, 3, 8, 8}), Tensor::zeros({1, 4, 4, 2}));
              }),
              ::testing::ThrowsMessage<ShapeError>(HasSubstr("grid_sample: tensor 'grid'")));
  EXPECT_THROW((void)sampler.backward(Tensor::zeros({1, 3, 8, 8}), Tensor::zeros({1, 4, 4, 2}),
                                      Tensor::zeros({1, 3, 5, 4})),
               ShapeError);
}

TEST(BilinearSampler, Describe) {
  EXPECT_EQ(BilinearSampler().describe(),
            "BilinearSampler(mode='bilinear', padding_mode='zeros', align_corners=False)");
  EXPECT_EQ(BilinearSampler(BilinearSamplerOptions()
                                .mode(F::Interpolation::bicubic)
                                .padding_mode(F::PaddingMode::reflection)
                                .align_corners(true))
                .describe(),
            "BilinearSampler(mode='bicubic', padding_mode='reflection', align_corners=True)");
}

}  // namespace
}  // namespace cvattn
