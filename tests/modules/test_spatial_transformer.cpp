// SpatialTransformer / StnClassifier (MODULES.md §9) against the PyTorch tutorial Net
// (tests/fixtures/stn.py).
#include "cvattn/modules/spatial_transformer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/fixtures.hpp"
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
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kTheta), fx.tensor("theta"), test::Tolerance{})
        << fx.name();
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kGrid), fx.tensor("grid"), test::Tolerance{})
        << fx.name();
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
  EXPECT_THAT([&] { (void)StnClassifier::from_state_dict(dict); },
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
  EXPECT_THAT([&] { (void)net.forward(Tensor::zeros({1, 1, 27, 27})); },
              ::testing::ThrowsMessage<ShapeError>(
                  HasSubstr("StnClassifier: tensor 'input' [1, 1, 27, 27] must have H and W in "
                            "28..29")));
}

TEST(SpatialTransformer, RejectsBadWeights) {
  const auto fx = test::fixture("stn/net_n3_28_ac0");
  StateDict dict = io::load_safetensors(fx.path("weights.safetensors"));
  StateDict wrong = dict;
  wrong.set("fc_loc.2.weight", Tensor::zeros({6, 31}));
  EXPECT_THAT([&] { (void)SpatialTransformer::from_state_dict(wrong); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("fc_loc.2.weight")));
  StateDict missing = dict;
  missing.erase("localization.3.bias");
  EXPECT_THAT([&] { (void)SpatialTransformer::from_state_dict(missing); },
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
