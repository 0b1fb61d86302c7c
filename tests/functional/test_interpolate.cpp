// F::interpolate against F.interpolate (tests/fixtures/layers.py): nearest, bilinear, bicubic,
// sizes up / down / equal, fractional scale factors with and without recompute_scale_factor,
// align_corners, NaN.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/interpolate.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using F::Interpolation;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};
constexpr test::Tolerance kExact{0, 0};

F::InterpolateOptions options_of(const nlohmann::json& cfg, Interpolation mode) {
  F::InterpolateOptions o;
  o.mode(mode).align_corners(cfg["align_corners"].get<bool>());
  if (cfg.contains("size")) {
    o.size({cfg["size"][0].get<std::int64_t>(), cfg["size"][1].get<std::int64_t>()});
  } else {
    o.scale_factor({cfg["scale_factor"][0].get<double>(), cfg["scale_factor"][1].get<double>()});
    o.recompute_scale_factor(cfg.value("recompute_scale_factor", false));
  }
  return o;
}

TEST(Interpolate, MatchesPyTorchInEveryModeAndOption) {
  const auto cases = test::fixtures_in("layers", "interp_");
  int checked = 0;
  for (const auto& fx : cases) {
    if (!fx.params().contains("configs")) continue;
    const Interpolation mode = F::parse_interpolation(fx.params()["mode"].get<std::string>());
    const Tensor x = fx.tensor("input");
    int i = 0;
    for (const auto& cfg : fx.params()["configs"]) {
      SCOPED_TRACE(fx.name() + " " + cfg.dump());
      const Tensor y = F::interpolate(x, options_of(cfg, mode));
      // nearest copies values: exact (no source coordinate of these cases is near a tie).
      EXPECT_TENSOR_NEAR(y, fx.tensor("o" + std::to_string(i++)),
                         mode == Interpolation::nearest ? kExact : kTol);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5 * 23);
}

TEST(Interpolate, PropagatesNaNAsPyTorch) {
  const auto fx = test::fixture("layers/interp_nan");
  const Tensor x = fx.tensor("input");
  for (const char* mode : {"nearest", "bilinear", "bicubic"}) {
    SCOPED_TRACE(mode);
    const auto o = F::InterpolateOptions().size({7, 9}).mode(F::parse_interpolation(mode));
    EXPECT_TENSOR_NEAR(F::interpolate(x, o), fx.tensor(mode), kTol);
  }
}

TEST(Interpolate, BilinearOfAConstantIsTheConstant) {
  const Tensor x = Tensor::full({2, 3, 5, 7}, 3.25f);
  for (const auto mode : {Interpolation::bilinear, Interpolation::bicubic}) {
    const Tensor y = F::interpolate(
        x, F::InterpolateOptions().scale_factor({1.7, 0.6}).mode(mode).align_corners(true));
    EXPECT_EQ(y.shape(), (Shape{2, 3, 8, 4}));
    EXPECT_TENSOR_NEAR(y, Tensor::full(y.shape(), 3.25f), (test::Tolerance{1e-5, 1e-6}));
  }
}

TEST(Interpolate, RejectsBadOptions) {
  const Tensor x = Tensor::zeros({1, 2, 4, 4});
  EXPECT_THAT(test::Call([&] { (void)F::interpolate(x, F::InterpolateOptions()); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("interpolate: either size or scale_factor must be given")));
  EXPECT_THAT(
      test::Call(
          [&] { (void)F::interpolate(x, F::InterpolateOptions().size(3).scale_factor(2.0)); }),
      ThrowsMessage<ValueError>(HasSubstr("only one of size and scale_factor may be given")));
  EXPECT_THAT(test::Call([&] {
                (void)F::interpolate(x, F::InterpolateOptions().size(3).align_corners(true));
              }),
              ThrowsMessage<ValueError>(HasSubstr("align_corners can only be set")));
  EXPECT_THAT(
      test::Call([&] { (void)F::interpolate(x, F::InterpolateOptions().scale_factor(0.1)); }),
      ThrowsMessage<ValueError>(
          HasSubstr("input and output sizes must be greater than 0, got input (4, 4) and output "
                    "(0, 0)")));
  EXPECT_THAT(
      test::Call([&] { (void)F::interpolate(x, F::InterpolateOptions().scale_factor(-2.0)); }),
      ThrowsMessage<ValueError>(HasSubstr("scale_factor (-2, -2) must be positive")));
  EXPECT_THAT(test::Call([&] {
                (void)F::interpolate(x, F::InterpolateOptions().size({-1, 3}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("size (-1, 3) must be positive")));
  EXPECT_THAT(test::Call([] {
                (void)F::interpolate(Tensor::zeros({2, 4, 4}), F::InterpolateOptions().size(2));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("interpolate: tensor 'input' expected [N, C, H, W], got [2, 4, 4]")));
}

TEST(Interpolate, IsThreadSafe) {
  const Tensor x = test::random_tensor({2, 16, 9, 11}, 4);
  const auto o = F::InterpolateOptions().size({17, 23}).mode(Interpolation::bicubic);
  const Tensor ref = F::interpolate(x, o);
  std::vector<Tensor> out(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back([&, t] { out[t] = F::interpolate(x, o); });
  for (auto& th : threads) th.join();
  for (const auto& y : out) EXPECT_TENSOR_NEAR(y, ref, kExact);
}

}  // namespace
}  // namespace cvattn
