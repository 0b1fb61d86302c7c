// LocalisationNet (docs/modules.md §9) against torch nets of other layouts than the tutorial's
// (tests/fixtures/stn_parts.py) and the tutorial's own (tests/fixtures/stn.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/flatten.hpp"
#include "cvattn/modules/localisation_net.hpp"
#include "cvattn/modules/pooling.hpp"
#include "modules/stn_parts_nets.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::shared_ptr<LocalisationNet> two_stage() { return test::two_stage_localisation_net(); }

void expect_identity(const Tensor& theta, std::int64_t n) {
  ASSERT_EQ(theta.shape(), (Shape{n, 2, 3}));
  const float id[6] = {1, 0, 0, 0, 1, 0};
  for (std::int64_t i = 0; i < n * 6; ++i) EXPECT_EQ(theta.data()[i], id[i % 6]) << i;
}

TEST(LocalisationNet, MatchesTorchTwoStageNet) {
  const auto fx = test::fixture("stn_parts/loc_two_stage_n3_13x17");
  auto net = two_stage();
  net->load_from(io::load_safetensors(fx.path("weights.safetensors")));
  EXPECT_TENSOR_NEAR(net->forward(fx.tensor("input")), fx.tensor("theta"), test::Tolerance{});
}

TEST(LocalisationNet, MatchesTorchSingleSequentialWithFlatten) {
  const auto fx = test::fixture("stn_parts/loc_single_n2_9x7");
  auto layers = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Conv2d>(Conv2dOptions(2, 3, 3)), std::make_shared<ReLU>(),
      std::make_shared<Flatten>(), std::make_shared<Linear>(LinearOptions(105, 6))});
  LocalisationNet net(layers, nullptr, LocalisationNetOptions().features_name("loc"));
  net.load_from(io::load_safetensors(fx.path("weights.safetensors")));
  EXPECT_TRUE(net.regressor()->empty());
  EXPECT_EQ(net.state_dict().keys(),
            (std::vector<std::string>{"loc.0.weight", "loc.0.bias", "loc.3.weight", "loc.3.bias"}));
  EXPECT_TENSOR_NEAR(net.forward(fx.tensor("input")), fx.tensor("theta"), test::Tolerance{});
}

TEST(LocalisationNet, TutorialLoadsFromAWholeNetStateDict) {
  for (const auto& fx : test::fixtures_in("stn")) {
    if (fx.params().at("align_corners").get<bool>()) continue;  // theta does not depend on it
    auto net = LocalisationNet::tutorial_from_state_dict(
        io::load_safetensors(fx.path("weights.safetensors")));
    EXPECT_EQ(net->state_dict().size(), 8u);
    EXPECT_TENSOR_NEAR(net->forward(fx.tensor("input")), fx.tensor("theta"), test::Tolerance{})
        << fx.name();
  }
}

TEST(LocalisationNet, IdentityInitialisation) {
  // Whatever the other layers hold, the zero head with the identity bias gives the identity.
  auto net = two_stage();
  for (const auto& [key, value] : net->named_parameters()) {
    Tensor v = value;
    const Tensor r = test::random_tensor(v.shape(), 7);
    for (std::int64_t i = 0; i < v.numel(); ++i) v.data()[i] = r.data()[i];
  }
  auto fresh = two_stage();
  const Tensor x = test::random_tensor({4, 3, 13, 17}, 3);
  expect_identity(fresh->forward(x), 4);
  expect_identity(LocalisationNet::tutorial()->forward(test::random_tensor({2, 1, 27, 29}, 5)), 2);
  // Constructing the net zeroes a head the caller had filled.
  auto head = std::make_shared<Linear>(LinearOptions(6, 6));
  Tensor w = head->weight();
  for (std::int64_t i = 0; i < w.numel(); ++i) w.data()[i] = 1.0f;
  LocalisationNet net2(
      std::make_shared<Sequential>(
          std::initializer_list<std::shared_ptr<UnaryModule>>{std::make_shared<Flatten>(), head}),
      nullptr, LocalisationNetOptions().features_name("f"));
  expect_identity(net2.forward(test::random_tensor({3, 6, 1, 1}, 1)), 3);
}

TEST(LocalisationNet, LoadErrorsNameTheKeys) {
  const auto fx = test::fixture("stn_parts/loc_two_stage_n3_13x17");
  const StateDict dict = io::load_safetensors(fx.path("weights.safetensors"));
  auto net = two_stage();
  StateDict missing = dict;
  missing.erase("regressor.0.bias");
  EXPECT_THAT(test::Call([&] { net->load_from(missing); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'regressor.0.bias'")));
  StateDict wrong = dict;
  wrong.set("features.3.weight", Tensor::zeros({6, 4, 3, 2}));
  EXPECT_THAT(test::Call([&] { net->load_from(wrong); }),
              ThrowsMessage<ValueError>(HasSubstr("'features.3.weight' expected [6, 4, 3, 3], got "
                                                  "[6, 4, 3, 2]")));
  StateDict extra = dict;
  extra.set("regressor.5.weight", Tensor::zeros({6, 6}));
  EXPECT_THAT(test::Call([&] { net->load_from(extra); }),
              ThrowsMessage<ValueError>(HasSubstr("unexpected 'regressor.5.weight'")));
  // Keys of other modules (a whole model's state_dict) are skipped.
  StateDict whole = dict;
  whole.set("classifier.weight", Tensor::zeros({10, 4}));
  whole.set("features_extra.weight", Tensor::zeros({2}));
  EXPECT_NO_THROW(net->load_from(whole));
  EXPECT_EQ(net->select_keys(whole).size(), dict.size());
  // The tutorial loader on a file without its keys.
  EXPECT_THAT(test::Call([&] { (void)LocalisationNet::tutorial_from_state_dict(dict); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'localization.0.weight'")));
}

TEST(LocalisationNet, RejectsLayersThatCannotGiveTheta) {
  auto seq = [](std::initializer_list<std::shared_ptr<UnaryModule>> m) {
    return std::make_shared<Sequential>(m);
  };
  EXPECT_THAT(test::Call([&] { LocalisationNet(nullptr, seq({})); }),
              ThrowsMessage<ValueError>(HasSubstr("both stages are empty")));
  EXPECT_THAT(test::Call([&] {
                LocalisationNet(seq({std::make_shared<Flatten>()}),
                                seq({std::make_shared<ReLU>()}));
              }),
              ThrowsMessage<ValueError>(
                  HasSubstr("layer 'fc_loc.0' expected a Linear with 6 outputs and a bias")));
  EXPECT_THAT(
      test::Call([&] {
        LocalisationNet(
            seq({std::make_shared<Flatten>(), std::make_shared<Linear>(LinearOptions(8, 4))}),
            nullptr);
      }),
      ThrowsMessage<ValueError>(HasSubstr("layer 'localization.1' expected a Linear with 6")));
  EXPECT_THAT(test::Call([&] {
                LocalisationNet(seq({std::make_shared<Flatten>()}),
                                seq({std::make_shared<Linear>(LinearOptions(8, 6).bias(false))}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("with 6 outputs and a bias")));
  EXPECT_THAT(test::Call([&] {
                LocalisationNet(seq({std::make_shared<Flatten>()}),
                                seq({std::make_shared<Linear>(LinearOptions(8, 6))}),
                                LocalisationNetOptions().regressor_name("localization"));
              }),
              ThrowsMessage<ValueError>(HasSubstr("the regressor stage needs a name of its own")));
}

TEST(LocalisationNet, RejectsInputsOfTheWrongSize) {
  auto net = two_stage();
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({2, 3, 15, 17}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "LocalisationNet: input [2, 3, 15, 17] gives 180 features per sample after "
                  "'features', but 'regressor.0' expects in_features = 144")));
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({0, 3, 13, 17}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("is an empty batch")));
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({3, 13, 17}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("LocalisationNet: tensor 'input'")));
  EXPECT_THROW((void)net->forward(Tensor()), Error);
  // A wrong channel count fails in the layer that notices it.
  EXPECT_THROW((void)net->forward(Tensor::zeros({1, 2, 13, 17})), ShapeError);
}

TEST(LocalisationNet, SharedInstanceIsThreadSafe) {
  const auto fx = test::fixture("stn_parts/loc_two_stage_n3_13x17");
  auto net = two_stage();
  net->load_from(io::load_safetensors(fx.path("weights.safetensors")));
  const Tensor x = fx.tensor("input");
  std::vector<Tensor> results(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = net->forward(x); });
  }
  for (auto& th : threads) th.join();
  for (const auto& r : results) EXPECT_TENSOR_NEAR(r, fx.tensor("theta"), test::Tolerance{});
}

TEST(LocalisationNet, Describe) {
  EXPECT_EQ(LocalisationNet::tutorial()->describe(),
            "LocalisationNet(features='localization', regressor='fc_loc')");
  EXPECT_THAT(two_stage()->pretty_print(), HasSubstr("Linear(in_features=16, out_features=6"));
}

}  // namespace
}  // namespace cvattn
