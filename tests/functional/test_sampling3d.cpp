// Volumetric grid_sample / affine_grid (sampling3d.hpp) against PyTorch 1.13 fixtures
// (tests/fixtures/sampling3d.py), through the rank-dispatching entry points
// functional::grid_sample / grid_sample_backward / affine_grid / affine_grid_backward.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/sampling3d.hpp"
#include "cvattn/modules/bilinear_sampler.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = cvattn::functional;
using test::Tolerance;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr Tolerance kTol{1e-4, 1e-4};

F::GridSampleOptions options_from(const nlohmann::json& p) {
  return F::GridSampleOptions()
      .mode(F::parse_interpolation(p.at("mode").get<std::string>()))
      .padding_mode(F::parse_padding_mode(p.at("padding_mode").get<std::string>()))
      .align_corners(p.at("align_corners").get<bool>());
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& fx : test::fixtures_in("sampling3d")) names.push_back(fx.name());
  return names;
}

class Sampling3dFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(Sampling3dFixture, MatchesPyTorch) {
  const auto fx = test::fixture("sampling3d/" + GetParam());
  const auto& p = fx.params();
  const std::string op = p.at("op");
  for (const int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    set_num_threads(threads);
    if (op == "grid_sample") {
      const Tensor out = F::grid_sample(fx.tensor("input"), fx.tensor("grid"), options_from(p));
      EXPECT_TENSOR_NEAR(out, fx.tensor("output"), kTol);
      // The explicit entry point is the same function.
      EXPECT_TENSOR_NEAR(F::grid_sample3d(fx.tensor("input"), fx.tensor("grid"), options_from(p)),
                         out, (Tolerance{0.0, 0.0}));
    } else if (op == "grid_sample_backward") {
      const auto grads = F::grid_sample_backward(fx.tensor("input"), fx.tensor("grid"),
                                                 fx.tensor("grad_output"), options_from(p));
      EXPECT_TENSOR_NEAR(grads.grad_input, fx.tensor("grad_input"), kTol);
      EXPECT_TENSOR_NEAR(grads.grad_grid, fx.tensor("grad_grid"), kTol);
    } else if (op == "affine_grid") {
      const Tensor out = F::affine_grid(fx.tensor("theta"), p.at("size").get<Shape>(),
                                        p.at("align_corners").get<bool>());
      // PyTorch's float32 operations one for one, as in 2-D: bit-exact.
      EXPECT_TENSOR_NEAR(out, fx.tensor("output"), (Tolerance{0.0, 0.0}));
    } else if (op == "affine_grid_backward") {
      const Tensor gt = F::affine_grid_backward(fx.tensor("grad_grid"), p.at("size").get<Shape>(),
                                                p.at("align_corners").get<bool>());
      EXPECT_TENSOR_NEAR(gt, fx.tensor("grad_theta"), kTol);
    } else {
      FAIL() << "unknown op " << op;
    }
  }
  set_num_threads(1);
}

INSTANTIATE_TEST_SUITE_P(Torch, Sampling3dFixture, ::testing::ValuesIn(case_names()),
                         [](const auto& param_info) { return param_info.param; });

TEST(Sampling3dFixtures, CoverTheOptionSpace) {
  int fwd = 0, bwd = 0, affine = 0;
  for (const auto& fx : test::fixtures_in("sampling3d")) {
    const std::string op = fx.params().at("op");
    fwd += op == "grid_sample";
    bwd += op == "grid_sample_backward";
    affine += op == "affine_grid" || op == "affine_grid_backward";
  }
  // 2 modes x 3 paddings x 2 align_corners, 4 forward and 2 backward cases each, + 3 large.
  EXPECT_EQ(fwd, 2 * 3 * 2 * 4 + 3);
  EXPECT_EQ(bwd, 2 * 3 * 2 * 2 + 3);
  EXPECT_EQ(affine, 5 * 2 * 2);
}

// Worked example: a 2x2x2 volume of values v = 4z + 2y + x, sampled at its centre with
// align_corners=true, reads the mean 3.5; at a corner the corner value.
TEST(GridSample3d, WorkedExample) {
  const Tensor input = Tensor::from_vector({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor grid = Tensor::from_vector({1, 1, 1, 3, 3}, {0, 0, 0, 1, -1, 1, -1, 1, -1});
  const auto options = F::GridSampleOptions().align_corners(true);
  const Tensor out = F::grid_sample(input, grid, options);
  EXPECT_TENSOR_NEAR(out, Tensor::from_vector({1, 1, 1, 1, 3}, {3.5f, 5.0f, 2.0f}),
                     (Tolerance{1e-6, 0.0}));
}

TEST(GridSample3d, RejectsBicubicAndBadShapes) {
  const Tensor input = Tensor::zeros({2, 3, 4, 5, 6});
  EXPECT_THAT(
      test::Call([&] {
        (void)F::grid_sample(input, Tensor::zeros({2, 1, 1, 1, 3}),
                             F::GridSampleOptions().mode(F::Interpolation::bicubic));
      }),
      ThrowsMessage<ValueError>(HasSubstr("grid_sample: mode 'bicubic' supports 4-D input only")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample_backward(
                    input, Tensor::zeros({2, 1, 1, 1, 3}), Tensor::zeros({2, 3, 1, 1, 1}),
                    F::GridSampleOptions().mode(F::Interpolation::bicubic));
              }),
              ThrowsMessage<ValueError>(HasSubstr("grid_sample_backward: mode 'bicubic'")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(input, Tensor::zeros({2, 4, 4, 2}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("grid_sample: tensor 'grid' expected rank 5, got shape [2, 4, 4, 2]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(input, Tensor::zeros({2, 1, 2, 2, 2}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("grid_sample: tensor 'grid' expected [2, *, *, *, 3] (batch of 'input' "
                            "[2, 3, 4, 5, 6]), got [2, 1, 2, 2, 2]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)F::grid_sample(Tensor::zeros({1, 1, 0, 2, 2}), Tensor::zeros({1, 1, 1, 1, 3}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("expected non-empty spatial dimensions")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample_backward(input, Tensor::zeros({2, 1, 2, 2, 3}),
                                              Tensor::zeros({2, 3, 2, 2, 1}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "grid_sample_backward: tensor 'grad_output' expected [2, 3, 1, 2, 2]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(input, Tensor::zeros({2, 1 << 20, 1 << 20, 1, 3}));
              }),
              ::testing::Throws<Error>());
}

TEST(AffineGrid3d, RejectsBadArguments) {
  EXPECT_THAT(test::Call([] {
                (void)F::affine_grid(Tensor::zeros({2, 2, 3}), {2, 1, 3, 4, 5});
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "affine_grid: tensor 'theta' expected [2, 3, 4] (N of size [2, 1, 3, 4, 5]), "
                  "got [2, 2, 3]")));
  EXPECT_THAT(test::Call([] {
                (void)F::affine_grid(Tensor::zeros({1, 3, 4}), {1, 1, 0, 4, 5});
              }),
              ThrowsMessage<ValueError>(
                  HasSubstr("affine_grid: size expected positive entries {N, C, D, H, W}")));
  EXPECT_THAT(test::Call([] {
                (void)F::affine_grid_backward(Tensor::zeros({1, 3, 4, 5, 2}), {1, 1, 3, 4, 5});
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("affine_grid_backward: tensor 'grad_grid' expected [1, 3, 4, 5, 3]")));
}

// The identity theta samples a volume back onto itself (both align_corners).
TEST(AffineGrid3d, IdentityReproducesInput) {
  const Tensor theta = Tensor::from_vector({1, 3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  std::vector<float> values(3 * 4 * 5);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.7f * float(i));
  const Tensor input = Tensor::from_vector({1, 1, 3, 4, 5}, values);
  for (const bool ac : {false, true}) {
    const Tensor grid = F::affine_grid(theta, {1, 1, 3, 4, 5}, ac);
    EXPECT_EQ(grid.shape(), Shape({1, 3, 4, 5, 3}));
    EXPECT_TENSOR_NEAR(F::grid_sample(input, grid, F::GridSampleOptions().align_corners(ac)), input,
                       (Tolerance{1e-5, 0.0}));
  }
}

// The BilinearSampler module takes volumes as they are (it composes grid_sample).
TEST(BilinearSampler3d, ForwardAndBackwardMatchTorch) {
  const auto fx = test::fixture("sampling3d/bwd_random_bilinear_reflection_ac1");
  const BilinearSampler sampler(options_from(fx.params()));
  const auto fwd = test::fixture("sampling3d/fwd_random_bilinear_reflection_ac1");
  EXPECT_TENSOR_NEAR(sampler.forward(fwd.tensor("input"), fwd.tensor("grid")), fwd.tensor("output"),
                     kTol);
  const auto grads =
      sampler.backward(fx.tensor("input"), fx.tensor("grid"), fx.tensor("grad_output"));
  EXPECT_TENSOR_NEAR(grads.grad_input, fx.tensor("grad_input"), kTol);
  EXPECT_TENSOR_NEAR(grads.grad_grid, fx.tensor("grad_grid"), kTol);
}

}  // namespace
}  // namespace cvattn
