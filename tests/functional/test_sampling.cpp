#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/sampling.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
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

Shape size_from(const nlohmann::json& p) { return p.at("size").get<Shape>(); }

// ----------------------------------------------------------------------------------------------
// PyTorch fixtures: one test per case folder of tests/fixtures/sampling, run with 1 and 2 threads
// (2 threads with N = 1 takes grid_sample_backward's per-thread accumulators).

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& fx : test::fixtures_in("sampling")) names.push_back(fx.name());
  return names;
}

class SamplingFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(SamplingFixture, MatchesPyTorch) {
  const auto fx = test::fixture("sampling/" + GetParam());
  const auto& p = fx.params();
  const std::string op = p.at("op");
  for (const int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    set_num_threads(threads);
    if (op == "grid_sample") {
      const Tensor out = F::grid_sample(fx.tensor("input"), fx.tensor("grid"), options_from(p));
      EXPECT_TENSOR_NEAR(out, fx.tensor("output"), kTol);
    } else if (op == "grid_sample_backward") {
      const auto grads = F::grid_sample_backward(fx.tensor("input"), fx.tensor("grid"),
                                                 fx.tensor("grad_output"), options_from(p));
      EXPECT_TENSOR_NEAR(grads.grad_input, fx.tensor("grad_input"), kTol);
      EXPECT_TENSOR_NEAR(grads.grad_grid, fx.tensor("grad_grid"), kTol);
    } else if (op == "affine_grid") {
      const Tensor out =
          F::affine_grid(fx.tensor("theta"), size_from(p), p.at("align_corners").get<bool>());
      // affine_grid reproduces PyTorch's float32 operations one for one: bit-exact.
      EXPECT_TENSOR_NEAR(out, fx.tensor("output"), (Tolerance{0.0, 0.0}));
    } else if (op == "affine_grid_backward") {
      const Tensor gt = F::affine_grid_backward(fx.tensor("grad_grid"), size_from(p),
                                                p.at("align_corners").get<bool>());
      EXPECT_TENSOR_NEAR(gt, fx.tensor("grad_theta"), kTol);
    } else if (op == "projective_grid") {
      const Tensor out = F::projective_grid(fx.tensor("homography"), size_from(p),
                                            p.at("align_corners").get<bool>());
      EXPECT_TENSOR_NEAR(out, fx.tensor("output"), kTol);
    } else if (op == "tps_grid") {
      const Tensor out = F::tps_grid(fx.tensor("source_points"), fx.tensor("target_points"),
                                     size_from(p), p.at("align_corners").get<bool>());
      EXPECT_TENSOR_NEAR(out, fx.tensor("output"), kTol);
    } else {
      FAIL() << "unknown op " << op;
    }
  }
  set_num_threads(1);
}

INSTANTIATE_TEST_SUITE_P(Torch, SamplingFixture, ::testing::ValuesIn(case_names()),
                         [](const auto& param_info) { return param_info.param; });

TEST(SamplingFixtures, CoverTheOptionSpace) {
  // Guards against an empty or partial fixture folder silently passing.
  int forward = 0, backward = 0;
  for (const auto& fx : test::fixtures_in("sampling")) {
    const std::string op = fx.params().at("op");
    forward += op == "grid_sample";
    backward += op == "grid_sample_backward";
  }
  EXPECT_GE(forward, 18 * 5);
  EXPECT_GE(backward, 18 * 2);
}

// ----------------------------------------------------------------------------------------------
// docs/modules.md §8.5 worked examples, literally.

Tensor example_input() { return Tensor::from_vector({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6}); }

float sample_at(const Tensor& input, float x, float y, F::Interpolation mode,
                F::PaddingMode padding, bool align_corners) {
  const Tensor grid = Tensor::from_vector({1, 1, 1, 2}, {x, y});
  return F::grid_sample(
      input, grid,
      F::GridSampleOptions().mode(mode).padding_mode(padding).align_corners(align_corners))[0];
}

struct ExampleRow {
  float x, y;
  float bilinear_zeros, bilinear_border, bilinear_reflection, nearest_zeros, bicubic_zeros,
      bicubic_border;
};

TEST(GridSample, WorkedExamplesAlignCornersFalse) {
  using I = F::Interpolation;
  using P = F::PaddingMode;
  const Tensor in = example_input();
  const ExampleRow rows[] = {
      {-1.0f, -1.0f, 0.25f, 1.0f, 1.0f, 1.0f, 0.0625f, 0.625f},
      {0.0f, 0.0f, 3.5f, 3.5f, 3.5f, 2.0f, 4.15625f, 3.5f},
      {1.0f, 1.0f, 1.5f, 6.0f, 6.0f, 0.0f, 1.6875f, 6.375f},
      {0.5f, -0.25f, 3.5f, 3.5f, 3.5f, 3.0f, 4.432419f, 3.488281f},
      {1.5f, 0.0f, 0.0f, 4.5f, 4.25f, 0.0f, -0.563599f, 4.5f},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(testing::Message() << "grid (" << r.x << ", " << r.y << ")");
    EXPECT_NEAR(sample_at(in, r.x, r.y, I::bilinear, P::zeros, false), r.bilinear_zeros, 1e-5);
    EXPECT_NEAR(sample_at(in, r.x, r.y, I::bilinear, P::border, false), r.bilinear_border, 1e-5);
    EXPECT_NEAR(sample_at(in, r.x, r.y, I::bilinear, P::reflection, false), r.bilinear_reflection,
                1e-5);
    EXPECT_EQ(sample_at(in, r.x, r.y, I::nearest, P::zeros, false), r.nearest_zeros);
    EXPECT_NEAR(sample_at(in, r.x, r.y, I::bicubic, P::zeros, false), r.bicubic_zeros, 1e-5);
    EXPECT_NEAR(sample_at(in, r.x, r.y, I::bicubic, P::border, false), r.bicubic_border, 1e-5);
  }
}

TEST(GridSample, WorkedExamplesAlignCornersTrue) {
  using I = F::Interpolation;
  using P = F::PaddingMode;
  const Tensor in = example_input();
  for (const I mode : {I::bilinear, I::nearest, I::bicubic}) {
    for (const P padding : {P::zeros, P::border, P::reflection}) {
      SCOPED_TRACE(std::string(F::interpolation_name(mode)) + " " + F::padding_mode_name(padding));
      EXPECT_NEAR(sample_at(in, -1, -1, mode, padding, true), 1.0f, 1e-6);
      EXPECT_NEAR(sample_at(in, 1, 1, mode, padding, true), 6.0f, 1e-6);
    }
  }
  EXPECT_NEAR(sample_at(in, 0.5f, -0.25f, I::bilinear, P::zeros, true), 3.625f, 1e-6);
  EXPECT_NEAR(sample_at(in, 1.5f, 0.0f, I::bilinear, P::zeros, true), 2.25f, 1e-6);
  EXPECT_NEAR(sample_at(in, 1.5f, 0.0f, I::bilinear, P::border, true), 4.5f, 1e-6);
  EXPECT_NEAR(sample_at(in, 1.5f, 0.0f, I::bilinear, P::reflection, true), 4.0f, 1e-6);
}

TEST(GridSample, NearestRoundsHalfToEven) {
  const Tensor in = Tensor::from_vector({1, 1, 1, 3}, {10, 20, 30});
  const auto opt = F::GridSampleOptions().mode(F::Interpolation::nearest).align_corners(true);
  const Tensor grid = Tensor::from_vector({1, 1, 3, 2}, {-0.5f, 0, 0.5f, 0, -1.5f, 0});
  const Tensor out = F::grid_sample(in, grid, opt);
  EXPECT_EQ(out[0], 10.0f);  // ix 0.5 -> 0
  EXPECT_EQ(out[1], 30.0f);  // ix 1.5 -> 2
  EXPECT_EQ(out[2], 10.0f);  // ix -0.5 -> -0 -> index 0
}

TEST(GridSample, NonFiniteGridFollowsTheX86Kernel) {
  // §8.4: bilinear zeros -> NaN, border -> clamps (NaN to pixel 0), nearest zeros -> 0.
  const Tensor in = example_input();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  using I = F::Interpolation;
  using P = F::PaddingMode;
  EXPECT_TRUE(std::isnan(sample_at(in, nan, 0, I::bilinear, P::zeros, false)));
  EXPECT_TRUE(std::isnan(sample_at(in, inf, 0, I::bilinear, P::zeros, false)));
  EXPECT_EQ(sample_at(in, nan, -1, I::bilinear, P::border, true), 1.0f);
  EXPECT_EQ(sample_at(in, inf, -1, I::bilinear, P::border, true), 3.0f);
  EXPECT_EQ(sample_at(in, -inf, 1, I::bilinear, P::border, true), 4.0f);
  EXPECT_EQ(sample_at(in, nan, -1, I::bilinear, P::reflection, true), 1.0f);
  EXPECT_EQ(sample_at(in, nan, 0, I::nearest, P::zeros, false), 0.0f);
  EXPECT_EQ(sample_at(in, inf, 1, I::nearest, P::border, true), 6.0f);
  EXPECT_TRUE(std::isnan(sample_at(in, nan, 0, I::bicubic, P::border, false)));
  EXPECT_EQ(sample_at(in, 1e10f, 0, I::bilinear, P::zeros, false), 0.0f);
}

// ----------------------------------------------------------------------------------------------
// docs/modules.md §7 worked example and the identity round trip.

TEST(AffineGrid, WorkedExample) {
  const Tensor identity = Tensor::from_vector({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  const Tensor g0 = F::affine_grid(identity, {1, 1, 2, 3}, false);
  const std::vector<float> expected0 = {-2.0f / 3, -0.5f, 0, -0.5f, 2.0f / 3, -0.5f,
                                        -2.0f / 3, 0.5f,  0, 0.5f,  2.0f / 3, 0.5f};
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(g0[i], expected0[i]) << i;
  const Tensor rotation = Tensor::from_vector({1, 2, 3}, {0, -1, 0, 1, 0, 0});
  const Tensor g1 = F::affine_grid(rotation, {1, 1, 2, 3}, true);
  const std::vector<float> expected1 = {1, -1, 1, 0, 1, 1, -1, -1, -1, 0, -1, 1};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(g1[i], expected1[i]) << i;
}

TEST(AffineGrid, IdentityThetaReproducesInput) {
  const Tensor input = test::random_tensor({2, 3, 7, 9}, 11);
  Tensor theta = Tensor::zeros({2, 2, 3});
  for (int n = 0; n < 2; ++n) theta[n * 6] = theta[n * 6 + 4] = 1.0f;
  for (const bool ac : {false, true}) {
    for (const auto mode :
         {F::Interpolation::bilinear, F::Interpolation::nearest, F::Interpolation::bicubic}) {
      SCOPED_TRACE(std::string(F::interpolation_name(mode)) + (ac ? " ac" : ""));
      const Tensor grid = F::affine_grid(theta, input.shape(), ac);
      const Tensor out =
          F::grid_sample(input, grid, F::GridSampleOptions().mode(mode).align_corners(ac));
      EXPECT_TENSOR_NEAR(out, input, (Tolerance{1e-5, 1e-5}));
    }
  }
}

TEST(AffineGrid, OnePixelShiftMovesOneColumn) {
  // Translating by one pixel (2/W in normalised units) shifts the image by one column.
  const Tensor input = test::random_tensor({1, 2, 4, 5}, 3);
  const Tensor theta = Tensor::from_vector({1, 2, 3}, {1, 0, 2.0f / 5, 0, 1, 0});
  const Tensor out = F::grid_sample(input, F::affine_grid(theta, input.shape()));
  for (int c = 0; c < 2; ++c) {
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 4; ++x) EXPECT_NEAR(out.at(0, c, y, x), input.at(0, c, y, x + 1), 1e-5);
      EXPECT_EQ(out.at(0, c, y, 4), 0.0f);  // samples pixel centre 5, a full pixel outside
    }
  }
}

// ----------------------------------------------------------------------------------------------
// Projective and TPS grids: invariants besides the fixtures.

TEST(ProjectiveGrid, IdentityEqualsAffineIdentity) {
  Tensor h = Tensor::zeros({1, 3, 3});
  h[0] = h[4] = h[8] = 2.0f;  // scale does not matter in homogeneous coordinates
  const Tensor theta = Tensor::from_vector({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  for (const bool ac : {false, true}) {
    EXPECT_TENSOR_NEAR(F::projective_grid(h, {1, 1, 5, 8}, ac),
                       F::affine_grid(theta, {1, 1, 5, 8}, ac), (Tolerance{1e-7, 0}));
  }
}

TEST(ProjectiveGrid, HorizonGivesFarFiniteValues) {
  const Tensor h = Tensor::from_vector({1, 3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 0});
  const Tensor g = F::projective_grid(h, {1, 1, 3, 3}, true);
  for (std::int64_t i = 0; i < g.numel(); ++i) {
    EXPECT_TRUE(std::isfinite(g[i]));
    EXPECT_LE(std::fabs(g[i]), 1e6f);
  }
  EXPECT_EQ(g[0], -1e6f);  // (-1, -1) / +1e-12, clamped
}

TEST(TpsGrid, InterpolatesControlPointsAndReducesToAffine) {
  // With the targets on the base grid, the TPS map sends each target to its source point; with
  // sources an affine image of the targets, the TPS grid is that affine grid.
  const Tensor targets = F::regular_control_points(3, 3);
  ASSERT_EQ(targets.shape(), Shape({9, 2}));
  EXPECT_EQ(targets[0], -1.0f);
  EXPECT_EQ(targets[3], -1.0f);
  EXPECT_EQ(targets[16], 1.0f);
  const float a = 0.8f, b = -0.3f, c = 0.1f, d = 0.2f, e = 0.9f, f = -0.05f;
  Tensor src = Tensor::empty({1, 9, 2});
  for (int k = 0; k < 9; ++k) {
    const float x = targets[2 * k], y = targets[2 * k + 1];
    src[2 * k] = a * x + b * y + c;
    src[2 * k + 1] = d * x + e * y + f;
  }
  const Tensor theta = Tensor::from_vector({1, 2, 3}, {a, b, c, d, e, f});
  // align_corners=true puts base points exactly on the lattice corners.
  const Tensor tps = F::tps_grid(src, targets, {1, 1, 3, 3}, true);
  EXPECT_TENSOR_NEAR(tps, F::affine_grid(theta, {1, 1, 3, 3}, true), (Tolerance{1e-5, 0}));
  const Tensor bent =
      F::tps_grid(Tensor::from_vector({1, 3, 2}, {0.5f, 0.5f, -0.5f, 0.25f, 0.1f, -0.7f}),
                  Tensor::from_vector({3, 2}, {-1, -1, 1, -1, -1, 1}), {1, 1, 2, 2}, true);
  EXPECT_NEAR(bent[0], 0.5f, 1e-5);   // base (-1,-1) = target 0 -> source 0
  EXPECT_NEAR(bent[3], 0.25f, 1e-5);  // base (1,-1) = target 1 -> source 1 (y)
}

// ----------------------------------------------------------------------------------------------
// Backward invariants besides the fixtures.

TEST(GridSampleBackward, MatchesFiniteDifferencesOfForward) {
  // d/d grid of sum(grid_sample * gO) for bilinear in the interior, by central differences.
  const Tensor input = test::random_tensor({1, 2, 5, 6}, 21);
  Tensor grid = test::random_tensor({1, 3, 4, 2}, 22, -0.7f, 0.7f);
  const Tensor gout = test::random_tensor({1, 2, 3, 4}, 23);
  for (const auto padding :
       {F::PaddingMode::zeros, F::PaddingMode::border, F::PaddingMode::reflection}) {
    const auto opt = F::GridSampleOptions().padding_mode(padding);
    const auto grads = F::grid_sample_backward(input, grid, gout, opt);
    auto loss = [&](const Tensor& g) {
      const Tensor out = F::grid_sample(input, g, opt);
      double s = 0;
      for (std::int64_t i = 0; i < out.numel(); ++i) s += double{out[i]} * gout[i];
      return s;
    };
    for (std::int64_t i = 0; i < grid.numel(); ++i) {
      // Skip components whose pixel coordinate lies near an integer, where the derivative
      // jumps (a kink inside the difference interval would spoil the estimate).
      const double size = i % 2 == 0 ? 6 : 5;
      const double u = (double{grid[i]} + 1) * size / 2 - 0.5;
      if (std::fabs(u - std::round(u)) < 0.01) continue;
      Tensor plus = grid.clone(), minus = grid.clone();
      const float h = 1e-3f;
      plus[i] += h;
      minus[i] -= h;
      const double fd = (loss(plus) - loss(minus)) / (double{plus[i]} - minus[i]);
      EXPECT_NEAR(grads.grad_grid[i], fd, 2e-3) << i;
    }
  }
}

TEST(GridSampleBackward, GradInputIsAdjointOfForward) {
  // <grid_sample(x), gO> = <x, grad_input> since the forward is linear in x.
  const Tensor input = test::random_tensor({2, 3, 6, 7}, 31);
  const Tensor grid = test::random_tensor({2, 5, 4, 2}, 32, -1.3f, 1.3f);
  const Tensor gout = test::random_tensor({2, 3, 5, 4}, 33);
  for (const auto mode :
       {F::Interpolation::bilinear, F::Interpolation::nearest, F::Interpolation::bicubic}) {
    const auto opt = F::GridSampleOptions().mode(mode).padding_mode(F::PaddingMode::reflection);
    const Tensor out = F::grid_sample(input, grid, opt);
    const auto grads = F::grid_sample_backward(input, grid, gout, opt);
    double lhs = 0, rhs = 0;
    for (std::int64_t i = 0; i < out.numel(); ++i) lhs += double{out[i]} * gout[i];
    for (std::int64_t i = 0; i < input.numel(); ++i) rhs += double{input[i]} * grads.grad_input[i];
    EXPECT_NEAR(lhs, rhs, 1e-4 * (1 + std::fabs(lhs))) << F::interpolation_name(mode);
  }
}

TEST(GridSampleBackward, NonFiniteGridNeverReadsOutOfBounds) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor input = test::random_tensor({1, 2, 3, 4}, 41);
  const Tensor grid = Tensor::from_vector({1, 1, 4, 2}, {nan, 0, inf, -inf, 1e10f, -3e9f, 0, nan});
  const Tensor gout = test::random_tensor({1, 2, 1, 4}, 42);
  for (const auto mode :
       {F::Interpolation::bilinear, F::Interpolation::nearest, F::Interpolation::bicubic}) {
    for (const auto padding :
         {F::PaddingMode::zeros, F::PaddingMode::border, F::PaddingMode::reflection}) {
      for (const bool ac : {false, true}) {
        const auto grads = F::grid_sample_backward(
            input, grid, gout,
            F::GridSampleOptions().mode(mode).padding_mode(padding).align_corners(ac));
        EXPECT_EQ(grads.grad_input.shape(), input.shape());
        EXPECT_EQ(grads.grad_grid.shape(), grid.shape());
      }
    }
  }
}

TEST(GridSampleBackward, MultithreadedEqualsSerial) {
  const Tensor input = test::random_tensor({1, 5, 9, 11}, 51);
  const Tensor grid = test::random_tensor({1, 17, 19, 2}, 52, -1.2f, 1.2f);
  const Tensor gout = test::random_tensor({1, 5, 17, 19}, 53);
  set_num_threads(1);
  const auto serial = F::grid_sample_backward(input, grid, gout);
  set_num_threads(2);
  const auto parallel = F::grid_sample_backward(input, grid, gout);
  set_num_threads(1);
  EXPECT_TENSOR_NEAR(parallel.grad_input, serial.grad_input, (Tolerance{1e-6, 1e-6}));
  EXPECT_TENSOR_NEAR(parallel.grad_grid, serial.grad_grid, (Tolerance{0, 0}));
}

TEST(GridSample, ConcurrentCallsFromUserThreadsAgree) {
  // Pure functions: any number of user threads may call them at once.
  const Tensor input = test::random_tensor({2, 5, 13, 11}, 71);
  const Tensor grid = test::random_tensor({2, 9, 7, 2}, 72, -1.3f, 1.3f);
  const auto opt = F::GridSampleOptions().mode(F::Interpolation::bicubic);
  const Tensor expected = F::grid_sample(input, grid, opt);
  std::vector<Tensor> results(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = F::grid_sample(input, grid, opt); });
  }
  for (auto& t : threads) t.join();
  for (const Tensor& r : results) EXPECT_TENSOR_NEAR(r, expected, (Tolerance{0, 0}));
}

TEST(AffineGridBackward, IsAdjointOfAffineGrid) {
  const Tensor theta = test::random_tensor({2, 2, 3}, 61);
  const Tensor gg = test::random_tensor({2, 5, 7, 2}, 62);
  const Shape size = {2, 1, 5, 7};
  for (const bool ac : {false, true}) {
    const Tensor grid = F::affine_grid(theta, size, ac);
    const Tensor gt = F::affine_grid_backward(gg, size, ac);
    double lhs = 0, rhs = 0;
    for (std::int64_t i = 0; i < grid.numel(); ++i) lhs += double{grid[i]} * gg[i];
    for (std::int64_t i = 0; i < theta.numel(); ++i) rhs += double{theta[i]} * gt[i];
    EXPECT_NEAR(lhs, rhs, 1e-4);
  }
}

// ----------------------------------------------------------------------------------------------
// Errors.

TEST(Sampling, ParsesPyTorchWords) {
  EXPECT_EQ(F::parse_interpolation("bicubic"), F::Interpolation::bicubic);
  EXPECT_EQ(F::parse_padding_mode("reflection"), F::PaddingMode::reflection);
  EXPECT_STREQ(F::padding_mode_name(F::PaddingMode::border), "border");
  EXPECT_STREQ(F::interpolation_name(F::Interpolation::nearest), "nearest");
  EXPECT_THAT(test::Call([] { (void)F::parse_interpolation("linear"); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("mode expected one of bilinear, nearest, bicubic, got 'linear'")));
  EXPECT_THAT(test::Call([] { (void)F::parse_padding_mode("zero"); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("padding_mode expected one of zeros, border, reflection, got 'zero'")));
}

TEST(GridSample, RejectsBadShapes) {
  const Tensor input = Tensor::zeros({2, 3, 32, 32});
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(input, Tensor::zeros({1, 16, 16, 2}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("grid_sample: tensor 'grid' expected [2, *, *, 2] (batch of 'input' "
                            "[2, 3, 32, 32]), got [1, 16, 16, 2]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(input, Tensor::zeros({2, 16, 16, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("got [2, 16, 16, 3]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(Tensor::zeros({3, 32, 32}), Tensor::zeros({3, 4, 4, 2}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("grid_sample: tensor 'input' expected rank 4, got shape [3, 32, 32]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(Tensor::zeros({1, 1, 0, 4}), Tensor::zeros({1, 2, 2, 2}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "grid_sample: tensor 'input' expected non-empty spatial dimensions, got "
                  "[1, 1, 0, 4]")));
  EXPECT_THAT(test::Call([&] { (void)F::grid_sample(input, Tensor()); }),
              ThrowsMessage<ShapeError>(HasSubstr("grid_sample: tensor 'grid' is undefined")));
  EXPECT_THAT(test::Call([&] {
                (void)F::grid_sample(input, Tensor::zeros({2, 4, 4, 2}),
                                     F::GridSampleOptions().mode(static_cast<F::Interpolation>(7)));
              }),
              ThrowsMessage<ValueError>(HasSubstr("grid_sample: unknown interpolation mode 7")));
}

TEST(GridSample, EmptyOutputsAreFine) {
  EXPECT_EQ(F::grid_sample(Tensor::zeros({2, 0, 3, 3}), Tensor::zeros({2, 4, 4, 2})).shape(),
            Shape({2, 0, 4, 4}));
  EXPECT_EQ(F::grid_sample(Tensor::zeros({2, 3, 3, 3}), Tensor::zeros({2, 0, 4, 2})).shape(),
            Shape({2, 3, 0, 4}));
  const auto g = F::grid_sample_backward(Tensor::zeros({0, 3, 3, 3}), Tensor::zeros({0, 4, 4, 2}),
                                         Tensor::zeros({0, 3, 4, 4}));
  EXPECT_EQ(g.grad_input.shape(), Shape({0, 3, 3, 3}));
}

TEST(GridSampleBackward, RejectsBadGradOutput) {
  EXPECT_THAT(test::Call([] {
                (void)F::grid_sample_backward(Tensor::zeros({2, 3, 8, 8}),
                                              Tensor::zeros({2, 4, 5, 2}),
                                              Tensor::zeros({2, 3, 5, 4}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "grid_sample_backward: tensor 'grad_output' expected [2, 3, 4, 5] (the shape of "
                  "grid_sample's output), got [2, 3, 5, 4]")));
}

TEST(AffineGrid, RejectsBadArguments) {
  const Tensor theta = Tensor::zeros({2, 2, 3});
  EXPECT_THAT(test::Call([&] {
                (void)F::affine_grid(theta, {2, 3, 8});
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("affine_grid: size expected 4 entries {N, C, H, W}, got [2, 3, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::affine_grid(theta, {2, 3, 0, 8});
              }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "affine_grid: size expected positive entries {N, C, H, W}, got [2, 3, 0, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::affine_grid(Tensor::zeros({2, 3, 2}), {2, 3, 8, 8});
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "affine_grid: tensor 'theta' expected [2, 2, 3] (N of size [2, 3, 8, 8]), got "
                  "[2, 3, 2]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::affine_grid(theta, {1, 3, 8, 8});
              }),
              ThrowsMessage<ShapeError>(HasSubstr("got [2, 2, 3]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::affine_grid_backward(Tensor::zeros({2, 8, 7, 2}), {2, 3, 8, 8});
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("affine_grid_backward: tensor 'grad_grid' expected [2, 8, 8, 2]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::affine_grid(theta, {2, 3, 1 << 20, 1 << 20});
              }),
              ThrowsMessage<ValueError>(HasSubstr("affine_grid")));
}

TEST(ProjectiveGrid, RejectsBadShapes) {
  EXPECT_THAT(test::Call([] {
                (void)F::projective_grid(Tensor::zeros({1, 2, 3}), {1, 1, 4, 4});
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("projective_grid: tensor 'homography' expected [1, 3, 3] (N of size "
                            "[1, 1, 4, 4]), got [1, 2, 3]")));
}

TEST(TpsGrid, RejectsDegenerateOrMismatchedPoints) {
  const Tensor src = Tensor::zeros({1, 3, 2});
  EXPECT_THAT(
      test::Call([&] {
        (void)F::tps_grid(src, Tensor::from_vector({3, 2}, {0, 0, 0.5f, 0.5f, 1, 1}), {1, 1, 4, 4});
      }),
      ThrowsMessage<ValueError>(HasSubstr("tps_grid: tensor 'target_points' expected K distinct "
                                          "points not all on one line")));
  EXPECT_THAT(test::Call([&] {
                (void)F::tps_grid(Tensor::zeros({1, 4, 2}),
                                  Tensor::from_vector({4, 2}, {0, 0, 1, 0, 0, 1, 1, 0}),
                                  {1, 1, 4, 4});
              }),
              ThrowsMessage<ValueError>(HasSubstr("the TPS system is singular")));
  EXPECT_THAT(test::Call([&] {
                (void)F::tps_grid(Tensor::zeros({1, 2, 2}), Tensor::zeros({2, 2}), {1, 1, 4, 4});
              }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "tps_grid: tensor 'source_points' expected at least 3 control points, got 2")));
  EXPECT_THAT(test::Call([&] {
                (void)F::tps_grid(src, Tensor::zeros({4, 2}), {1, 1, 4, 4});
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("tps_grid: tensor 'target_points' expected [3, 2] or [1, 3, 2] (K of "
                            "'source_points' [1, 3, 2]), got [4, 2]")));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(
      test::Call([&] {
        (void)F::tps_grid(src, Tensor::from_vector({3, 2}, {0, 0, 1, 0, nan, 1}), {1, 1, 4, 4});
      }),
      ThrowsMessage<ValueError>(HasSubstr("tps_grid: tensor 'target_points' must be finite")));
  EXPECT_THAT(test::Call([] { (void)F::regular_control_points(1, 3); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("regular_control_points: rows and cols expected >= 2, got 1 x 3")));
}

}  // namespace
}  // namespace cvattn
