// SpatialTransformer / StnClassifier (docs/modules.md §9) against the PyTorch tutorial Net
// (tests/fixtures/stn.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/pooling.hpp"
#include "cvattn/modules/spatial_transformer.hpp"
#include "modules/stn_parts_nets.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;

SpatialTransformerOptions options_of(const test::Fixture& fx) {
  return SpatialTransformerOptions().align_corners(fx.params().at("align_corners").get<bool>());
}

TEST(SpatialTransformer, MatchesTutorialStn) {
  int seen = 0;
  for (const auto& fx : test::fixtures_in("stn")) {
    // Every case, stn-only or whole-Net weights: the transformer reads its own keys.
    const StateDict dict = io::load_safetensors(fx.path("weights.safetensors"));
    auto stn = SpatialTransformer::from_state_dict(dict, options_of(fx));
    const Attended r = stn->forward_with_maps(fx.tensor("input"));
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{}) << fx.name();
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kTheta), fx.tensor("theta"), test::Tolerance{}) << fx.name();
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kGrid), fx.tensor("grid"), test::Tolerance{}) << fx.name();
    EXPECT_TENSOR_NEAR(stn->forward(fx.tensor("input")), fx.tensor("output"), test::Tolerance{});
    ++seen;
  }
  EXPECT_GE(seen, 6);
}

TEST(StnClassifier, MatchesTutorialNet) {
  int seen = 0;
  for (const auto& fx : test::fixtures_in("stn")) {
    if (!fx.params().at("full").get<bool>()) continue;
    const StateDict dict = io::load_safetensors(fx.path("weights.safetensors"));
    ASSERT_TRUE(StnClassifier::has_classifier_keys(dict));
    auto net = StnClassifier::from_state_dict(dict, options_of(fx));
    const Attended r = net->forward_with_maps(fx.tensor("input"));
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("logits"), test::Tolerance{}) << fx.name();
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kLogits), fx.tensor("logits"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at("output"), fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kTheta), fx.tensor("theta"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kGrid), fx.tensor("grid"), test::Tolerance{});
    // The state_dict round-trips under the tutorial's own key names.
    EXPECT_EQ(net->state_dict().size(), dict.size());
    ++seen;
  }
  EXPECT_GE(seen, 3);
}

TEST(SpatialTransformer, StnOnlyKeysAreNotAClassifier) {
  const auto fx = test::fixture("stn/stn_n2_27_ac0");
  const StateDict dict = io::load_safetensors(fx.path("weights.safetensors"));
  EXPECT_FALSE(StnClassifier::has_classifier_keys(dict));
  EXPECT_EQ(dict.size(), 8u);
  EXPECT_THAT(test::Call([&] { (void)StnClassifier::from_state_dict(dict); }),
              ::testing::ThrowsMessage<ValueError>(HasSubstr("conv1.weight")));
}

TEST(SpatialTransformer, IdentityInitReproducesInput) {
  // Unloaded: the tutorial's identity regressor, so theta = [[1,0,0],[0,1,0]] and, with
  // align_corners=false, the bilinear resample hits pixel centres exactly.
  const auto fx = test::fixture("stn/identity_n2_28");
  SpatialTransformer stn;
  const Tensor x = fx.tensor("input");
  const Attended r = stn.forward_with_maps(x);
  EXPECT_TENSOR_NEAR(r.output, x, test::Tolerance{});
  const Tensor theta = r.maps.at(maps::kTheta);
  const float id[6] = {1, 0, 0, 0, 1, 0};
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 6; ++i) EXPECT_EQ(theta.data()[n * 6 + i], id[i]);
  }
  // And the fixture's identity-initialised Net agrees.
  EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(theta, fx.tensor("theta"), test::Tolerance{});
}

TEST(SpatialTransformer, RejectsBadInputs) {
  SpatialTransformer stn;
  auto message = [&](const Shape& s) {
    try {
      (void)stn.forward(Tensor::zeros(s));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message({2, 1, 32, 32}),
              HasSubstr("SpatialTransformer: tensor 'input' [2, 1, 32, 32] must have H and W in "
                        "26..29"));
  EXPECT_THAT(message({2, 1, 28, 25}), HasSubstr("must have H and W in 26..29"));
  EXPECT_THAT(message({2, 3, 28, 28}), HasSubstr("SpatialTransformer: tensor 'input'"));
  EXPECT_THAT(message({1, 28, 28}), HasSubstr("SpatialTransformer: tensor 'input'"));
  EXPECT_THAT(message({0, 1, 28, 28}), HasSubstr("is an empty batch"));
  EXPECT_THROW((void)stn.forward(Tensor()), Error);

  StnClassifier net;
  EXPECT_THAT(test::Call([&] {
                (void)net.forward(Tensor::zeros({1, 1, 27, 27}));
              }),
              ::testing::ThrowsMessage<ShapeError>(
                  HasSubstr("StnClassifier: tensor 'input' [1, 1, 27, 27] must have H and W in "
                            "28..29")));
}

TEST(SpatialTransformer, RejectsBadWeights) {
  const auto fx = test::fixture("stn/net_n3_28_ac0");
  StateDict dict = io::load_safetensors(fx.path("weights.safetensors"));
  StateDict wrong = dict;
  wrong.set("fc_loc.2.weight", Tensor::zeros({6, 31}));
  EXPECT_THAT(test::Call([&] { (void)SpatialTransformer::from_state_dict(wrong); }),
              ::testing::ThrowsMessage<ValueError>(HasSubstr("fc_loc.2.weight")));
  StateDict missing = dict;
  missing.erase("localization.3.bias");
  EXPECT_THAT(test::Call([&] { (void)SpatialTransformer::from_state_dict(missing); }),
              ::testing::ThrowsMessage<ValueError>(HasSubstr("localization.3.bias")));
}

TEST(SpatialTransformer, SharedInstanceIsThreadSafe) {
  const auto fx = test::fixture("stn/net_n3_28_ac0");
  auto net = StnClassifier::from_state_dict(io::load_safetensors(fx.path("weights.safetensors")),
                                            options_of(fx));
  const Tensor x = fx.tensor("input");
  const Tensor expected = fx.tensor("logits");
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) results[t] = net->forward(x);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& r : results) EXPECT_TENSOR_NEAR(r, expected, test::Tolerance{});
}

// The separate parts composed with a non-tutorial localisation net, a 9 x 11 output, border
// padding and align_corners=true (tests/fixtures/stn_parts.py).
TEST(SpatialTransformer, ComposesItsParts) {
  const auto fx = test::fixture("stn_parts/stn_custom_n3_13x17_to_9x11_border_ac1");
  auto loc = test::two_stage_localisation_net();
  SpatialTransformer stn(loc, SpatialTransformerOptions()
                                  .align_corners(true)
                                  .padding_mode(functional::PaddingMode::border)
                                  .output_size(Pair2(9, 11)));
  // The transformer's keys are the localisation net's.
  stn.load_state_dict(io::load_safetensors(fx.path("weights.safetensors")));
  const Tensor x = fx.tensor("input");
  const Attended r = stn.forward_with_maps(x);
  EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kTheta), fx.tensor("theta"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kGrid), fx.tensor("grid"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(stn.theta(x), fx.tensor("theta"), test::Tolerance{});
  // The parts give the same numbers on their own.
  const Tensor grid = stn.grid_generator()->forward(stn.localisation()->forward(x), x.shape());
  EXPECT_TENSOR_NEAR(stn.sampler()->forward(x, grid), fx.tensor("output"), test::Tolerance{});
  EXPECT_EQ(stn.localization(), loc->features());
  EXPECT_EQ(stn.fc_loc(), loc->regressor());
  EXPECT_EQ(stn.describe(),
            "SpatialTransformer(align_corners=True, padding_mode='border', output_size=(9, 11))");
  // Input sizes the net cannot take fail in the localisation net, naming the sizes.
  EXPECT_THAT(test::Call([&] {
                (void)stn.forward(Tensor::zeros({1, 3, 15, 17}));
              }),
              ::testing::ThrowsMessage<ShapeError>(HasSubstr("expects in_features = 144")));
}

TEST(SpatialTransformer, IdentityInitReproducesInputForBothAlignCorners) {
  auto features = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<AdaptiveAvgPool2d>(Pair2(2))});
  auto regressor = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Linear>(LinearOptions(12, 6))});
  const Tensor x = test::random_tensor({2, 3, 7, 5}, 11);
  const Tensor tut = test::random_tensor({3, 1, 29, 26}, 12);
  for (const bool ac : {false, true}) {
    const auto opt = SpatialTransformerOptions().align_corners(ac);
    SpatialTransformer stn(std::make_shared<LocalisationNet>(features, regressor), opt);
    EXPECT_TENSOR_NEAR(stn.forward(x), x, test::Tolerance{}) << "align_corners " << ac;
    EXPECT_TENSOR_NEAR(SpatialTransformer(opt).forward(tut), tut, test::Tolerance{})
        << "align_corners " << ac;
  }
}

TEST(SpatialTransformer, KeysAndLoadingStayTheTutorials) {
  const std::vector<std::string> keys{"localization.0.weight", "localization.0.bias",
                                      "localization.3.weight", "localization.3.bias",
                                      "fc_loc.0.weight",       "fc_loc.0.bias",
                                      "fc_loc.2.weight",       "fc_loc.2.bias"};
  EXPECT_EQ(SpatialTransformer().state_dict().keys(), keys);
  // A Net state_dict loads strictly into a transformer built from a separately loaded net too.
  const auto fx = test::fixture("stn/net_n3_28_ac0");
  const StateDict dict = io::load_safetensors(fx.path("weights.safetensors"));
  SpatialTransformer stn(LocalisationNet::tutorial_from_state_dict(dict));
  EXPECT_TENSOR_NEAR(stn.forward(fx.tensor("input")), fx.tensor("output"), test::Tolerance{});
  EXPECT_THAT(test::Call([] { SpatialTransformer(std::shared_ptr<LocalisationNet>()); }),
              ::testing::ThrowsMessage<ValueError>(HasSubstr("localisation net is null")));
  EXPECT_THAT(test::Call([] { StnClassifier(SpatialTransformerOptions().output_size(Pair2(20))); }),
              ::testing::ThrowsMessage<ValueError>(HasSubstr("StnClassifier: output_size")));
}

// The examples of README.md and docs/sampling.md, run: a custom net with an output size, then
// the parts with their gradients chained.
TEST(SpatialTransformer, DocumentedExamplesRun) {
  using Layers = std::initializer_list<std::shared_ptr<UnaryModule>>;
  auto features = std::make_shared<Sequential>(
      Layers{std::make_shared<Conv2d>(Conv2dOptions(3, 8, 3).padding(1)), std::make_shared<ReLU>(),
             std::make_shared<AdaptiveAvgPool2d>(Pair2(4))});
  auto regressor =
      std::make_shared<Sequential>(Layers{std::make_shared<Linear>(LinearOptions(128, 6))});
  auto loc = std::make_shared<LocalisationNet>(
      features, regressor,
      LocalisationNetOptions().features_name("features").regressor_name("regressor"));
  SpatialTransformer stn(loc, SpatialTransformerOptions()
                                  .output_size(Pair2(64, 64))
                                  .padding_mode(functional::PaddingMode::border));
  const Tensor x = test::random_tensor({2, 3, 37, 50}, 21);
  const Attended r = stn.forward_with_maps(x);
  EXPECT_EQ(r.output.shape(), (Shape{2, 3, 64, 64}));
  EXPECT_EQ(r.maps.at(maps::kGrid).shape(), (Shape{2, 64, 64, 2}));

  const Tensor theta = test::random_tensor({2, 2, 3}, 22);
  const Tensor dy = test::random_tensor({2, 3, 37, 50}, 23);
  AffineGridGenerator grids(AffineGridGeneratorOptions().align_corners(false));
  BilinearSampler sampler;
  const Tensor grid = grids.forward(theta, x.shape());
  EXPECT_TENSOR_NEAR(sampler.forward(x, grid), functional::grid_sample(x, grid),
                     (test::Tolerance{0, 0}));
  const Tensor dtheta = grids.backward(sampler.backward(x, grid, dy).grad_grid);
  EXPECT_TENSOR_NEAR(dtheta,
                     functional::affine_grid_backward(
                         functional::grid_sample_backward(x, grid, dy).grad_grid, x.shape()),
                     (test::Tolerance{0, 0}));
}

TEST(SpatialTransformer, Describe) {
  EXPECT_EQ(SpatialTransformer().describe(), "SpatialTransformer(align_corners=False)");
  EXPECT_EQ(SpatialTransformer(SpatialTransformerOptions().align_corners(true)).describe(),
            "SpatialTransformer(align_corners=True)");
}

}  // namespace
}  // namespace cvattn

namespace cvattn {
namespace {

// The shipped demo model (tools/train/stn_digits.py) through cvattn's own modules reproduces the
// logits and thetas PyTorch stored beside the weights.
TEST(StnClassifier, ShippedDemoWeightsReproduceTorchLogits) {
  const std::string dir = std::string(CVATTN_ASSETS_DIR) + "/weights/";
  const StateDict dict = io::load_safetensors(dir + "stn_digits.safetensors");
  const auto net = StnClassifier::from_state_dict(dict);
  const Tensor input = io::read_npy(dir + "stn_digits_check/input.npy");
  const Attended r = net->forward_with_maps(input);
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kLogits), io::read_npy(dir + "stn_digits_check/logits.npy"),
                     test::Tolerance{});
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kTheta), io::read_npy(dir + "stn_digits_check/theta.npy"),
                     test::Tolerance{});
}

}  // namespace
}  // namespace cvattn
