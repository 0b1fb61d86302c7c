// Whole timm ResNet-family networks (issue 20) against timm's own forward (tests/fixtures/
// models.py): logits, pooled features, CAM and the attention maps by module path, with weights
// regenerated bit for bit from the case's seed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/residual.hpp"
#include "cvattn/functional/saliency.hpp"
#include "cvattn/models/resnet.hpp"
#include "cvattn/models/timm.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/model_fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn::test {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
namespace F = cvattn::functional;

TEST(ModelWeights, GeneratorMatchesTheFixtureScriptBitForBit) {
  std::ifstream in(fixtures_root() / "models" / "generator.json");
  ASSERT_TRUE(in) << "run tests/fixtures/models.py";
  const nlohmann::json j = nlohmann::json::parse(in);
  const Tensor t = generated(j["key"], shape_of(j["shape"]), j["seed"].get<std::uint64_t>());
  ASSERT_EQ(t.numel(), static_cast<std::int64_t>(j["values"].size()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    EXPECT_EQ(t[i], j["values"][static_cast<std::size_t>(i)].get<float>()) << i;
  }
  EXPECT_EQ(hex(checksum(j["key"], t)), j["checksum"].get<std::string>());
}

// The convolutional cases (those with a CAM); test_timm_vit.cpp takes the others.
std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const Fixture& fx : fixtures_in("models")) {
    if (fx.has("cam")) names.push_back(fx.name());
  }
  return names;
}

class TimmNetwork : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmNetwork, MatchesTimm) {
  const Fixture fx = fixture("models/" + GetParam());
  const auto net = network_for(fx);
  ASSERT_EQ(net->model_name(), fx.params()["model_name"].get<std::string>());
  const models::NetworkOutput out = net->run(input_for(fx));

  const Tensor logits = fx.tensor("output");
  EXPECT_TENSOR_NEAR(out.logits, logits, network_tolerance(logits));
  const Tensor features = fx.tensor("features");
  EXPECT_TENSOR_NEAR(out.features, features, network_tolerance(features));
  EXPECT_EQ(out.feature_map.shape(), shape_of(fx.params()["feature_map_shape"]));
  ASSERT_TRUE(net->has_class_activation_map());
  const Tensor cam = fx.tensor("cam");
  EXPECT_TENSOR_NEAR(net->class_activation_map(out), cam, network_tolerance(cam));

  // Every map timm computes, under timm's module path, in forward order.
  std::vector<std::string> paths;
  for (const auto& item : out.maps.items()) paths.push_back(item.first);
  EXPECT_EQ(paths, fx.params()["map_paths"].get<std::vector<std::string>>());
  for (const auto& path : fx.params()["saved_maps"]) {
    const Tensor ref = fx.tensor(path.get<std::string>());
    EXPECT_TENSOR_NEAR(out.maps.at(path.get<std::string>()), ref, network_tolerance(ref)) << path;
  }
  // forward and forward_with_maps agree with run.
  EXPECT_TENSOR_NEAR(net->forward(input_for(fx)), out.logits, kExact);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TimmNetwork, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(ModelsCreate, ListsTheSupportedModels) {
  const auto& names = models::supported_models();
  for (const char* n : {"resnet18", "resnet50", "seresnet18", "seresnet50", "seresnext26d_32x4d",
                        "ecaresnet26t", "skresnet18", "skresnet34"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(ModelsCreate, UnknownNameIsANamedError) {
  EXPECT_THAT(test::Call([] { (void)models::create("resnet19", StateDict()); }),
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("unknown model_name 'resnet19'"), HasSubstr("seresnet18"))));
  EXPECT_THAT(test::Call([] { (void)models::build("vit_huge", 10); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown model_name 'vit_huge'")));
}

TEST(ModelsCreate, MismatchedStateDictIsANamedError) {
  const auto r18 = models::build("resnet18", 7);
  const StateDict dict = generated_state_dict(*r18, 1).dict;
  EXPECT_NO_THROW((void)models::create("resnet18", dict));
  // resnet18 weights for seresnet18: the SE keys are missing.
  EXPECT_THAT(test::Call([&] { (void)models::create("seresnet18", dict); }),
              ThrowsMessage<ValueError>(AllOf(HasSubstr("models::create('seresnet18')"),
                                              HasSubstr("missing 'layer1.0.se.fc1.weight'"))));
  // ... and for resnet50 every block differs.
  EXPECT_THAT(
      test::Call([&] { (void)models::create("resnet50", dict); }),
      ThrowsMessage<ValueError>(HasSubstr("'layer1.0.conv1.weight' expected [64, 64, 1, 1]")));
  StateDict extra = dict;
  extra.set("head.weight", Tensor::zeros({7, 512}));
  EXPECT_THAT(test::Call([&] { (void)models::create("resnet18", extra); }),
              ThrowsMessage<ValueError>(HasSubstr("unexpected 'head.weight'")));
  StateDict no_fc = dict;
  no_fc.erase("fc.weight");
  EXPECT_THAT(test::Call([&] { (void)models::create("resnet18", no_fc); }),
              ThrowsMessage<ValueError>(HasSubstr("no classifier weight 'fc.weight'")));
  StateDict bad_fc = dict;
  bad_fc.set("fc.weight", Tensor::zeros({7}));
  EXPECT_THAT(test::Call([&] { (void)models::create("resnet18", bad_fc); }),
              ThrowsMessage<ValueError>(HasSubstr("'fc.weight' expected [num_classes, features]")));
}

TEST(ModelsCreate, AcceptsNumBatchesTracked) {
  const auto net = models::build("seresnet18", 3);
  StateDict dict = generated_state_dict(*net, 2).dict;
  dict.set("bn1.num_batches_tracked", Tensor::zeros({}), /*integer=*/true);
  EXPECT_NO_THROW((void)models::create("seresnet18", dict));
}

TEST(ResNet, RejectsWrongInput) {
  const auto net = models::build("resnet18", 4);
  EXPECT_THAT(
      test::Call([&] {
        (void)net->forward(Tensor::zeros({1, 4, 32, 32}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, 3, *, *], got [1, 4, 32, 32]")));
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({3, 32, 32}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("ResNet::forward")));
}

TEST(ResNet, RunsTinyAndOddInputs) {
  const auto net = models::build("skresnet18", 5);
  const auto dict = generated_state_dict(*net, 3).dict;
  net->load_state_dict(dict);
  for (const Shape& s : {Shape{1, 3, 1, 1}, Shape{2, 3, 7, 5}, Shape{1, 3, 33, 17}}) {
    const models::NetworkOutput out = net->run(generated("input", s, 4));
    EXPECT_EQ(out.logits.shape(), (Shape{s[0], 5}));
    EXPECT_TRUE(out.logits.all_finite());
  }
}

TEST(ResNet, ForwardIsThreadSafe) {
  const auto net = models::build("seresnet18", 6);
  net->load_state_dict(generated_state_dict(*net, 5).dict);
  const Tensor x = generated("input", {1, 3, 40, 24}, 6);
  const models::NetworkOutput serial = net->run(x);
  std::vector<Tensor> results(6);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = net->run(x).logits; });
  }
  for (auto& t : threads) t.join();
  for (const Tensor& r : results) EXPECT_TENSOR_NEAR(r, serial.logits, kExact);
}

TEST(ResNetBlocks, BasicBlockRejectsCardinality) {
  EXPECT_THAT(
      test::Call([] { models::BasicBlock b(models::ResNetBlockOptions(64, 64).cardinality(32)); }),
      ThrowsMessage<ValueError>(HasSubstr("only cardinality 1")));
}

TEST(ResNetBlocks, MissingDownsampleIsAShapeError) {
  const models::BasicBlock block(models::ResNetBlockOptions(8, 16));
  EXPECT_THAT(test::Call([&] {
                (void)block.forward(Tensor::zeros({1, 8, 5, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("needs downsample=true")));
}

TEST(ResidualAdd, AddsAndRectifies) {
  const Tensor a = Tensor::from_vector({4}, {1.0f, -2.0f, 0.5f, -0.25f});
  const Tensor b = Tensor::from_vector({4}, {1.0f, 1.0f, -1.0f, 0.5f});
  const Tensor relu = Tensor::from_vector({4}, {2, 0, 0, 0.25f});
  const Tensor plain = Tensor::from_vector({4}, {2, -1, -0.5f, 0.25f});
  EXPECT_TENSOR_NEAR(F::residual_add(a, b), relu, kExact);
  EXPECT_TENSOR_NEAR(F::residual_add(a, b, false), plain, kExact);
  EXPECT_THAT(test::Call([&] {
                (void)F::residual_add(a, Tensor::zeros({2, 2}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected the shape of 'x' [4], got [2, 2]")));
}

TEST(ClassActivationMap, HandCheckable) {
  // F [1, 2, 1, 3]; W rows: class 0 = (1, 0), class 1 = (-1, 2).
  const Tensor f = Tensor::from_vector({1, 2, 1, 3}, {1, 2, 4, 1, 0, 0});
  const Tensor w = Tensor::from_vector({2, 2}, {1, 0, -1, 2});
  const Tensor logits = Tensor::from_vector({1, 2}, {0.0f, 1.0f});  // predicts class 1
  // class 1: -F0 + 2 F1 = (1, -2, -4) -> relu (1, 0, 0) -> / 1
  const Tensor predicted = Tensor::from_vector({1, 1, 3}, {1, 0, 0});
  EXPECT_TENSOR_NEAR(F::class_activation_map(f, w, logits), predicted, kExact);
  // class 0: (1, 2, 4) / 4
  const Tensor given = Tensor::from_vector({1, 1, 3}, {0.25f, 0.5f, 1.0f});
  EXPECT_TENSOR_NEAR(F::class_activation_map(f, w, logits, 0), given, kExact);
  // All negative stays zero.
  const Tensor neg = Tensor::from_vector({1, 2, 1, 3}, {-1, -2, -4, 1, 1, 1});
  const Tensor zero = Tensor::zeros({1, 1, 3});
  EXPECT_TENSOR_NEAR(F::class_activation_map(neg, w, logits, 0), zero, kExact);
  EXPECT_THAT(test::Call([&] { (void)F::class_activation_map(f, w, logits, 2); }),
              ThrowsMessage<ValueError>(HasSubstr("class_index 2 out of range for 2 classes")));
  EXPECT_THAT(test::Call([&] {
                (void)F::class_activation_map(f, Tensor::zeros({2, 3}), logits);
              }),
              ThrowsMessage<ShapeError>(HasSubstr("weight")));
}

}  // namespace
}  // namespace cvattn::test
