// Whole timm MobileNetV3 / EfficientNet networks (issue 20) against timm's own forward
// (tests/fixtures/models_mobile.py): logits, pooled features, CAM (EfficientNet) and every SE
// gate and CondConv routing by module path, with weights regenerated bit for bit from the
// case's seed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/models/efficientnet.hpp"
#include "cvattn/models/timm.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/model_fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn::test {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const Fixture& fx : fixtures_in("models_mobile")) names.push_back(fx.name());
  return names;
}

class TimmMobileNetwork : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmMobileNetwork, MatchesTimm) {
  const Fixture fx = fixture("models_mobile/" + GetParam());
  const auto net = network_for(fx);
  ASSERT_EQ(net->model_name(), fx.params()["model_name"].get<std::string>());
  const Tensor x = input_for(fx);
  const models::NetworkOutput out = net->run(x);

  const Tensor logits = fx.tensor("output");
  EXPECT_TENSOR_NEAR(out.logits, logits, network_tolerance(logits));
  const Tensor features = fx.tensor("features");
  EXPECT_TENSOR_NEAR(out.features, features, network_tolerance(features));
  EXPECT_EQ(net->num_features(), fx.params()["num_features"].get<std::int64_t>());
  EXPECT_EQ(out.feature_map.shape(), shape_of(fx.params()["feature_map_shape"]));

  const bool has_cam = fx.params()["has_cam"].get<bool>();
  ASSERT_EQ(net->has_class_activation_map(), has_cam);
  if (has_cam) {
    const Tensor cam = fx.tensor("cam");
    EXPECT_TENSOR_NEAR(net->class_activation_map(out), cam, network_tolerance(cam));
  } else {
    EXPECT_THAT(test::Call([&] { (void)net->class_activation_map(out); }),
                ThrowsMessage<ValueError>(HasSubstr("no class activation map")));
  }

  // Every map timm computes, under timm's module path, in forward order, all of them checked.
  std::vector<std::string> paths;
  for (const auto& item : out.maps.items()) paths.push_back(item.first);
  EXPECT_EQ(paths, fx.params()["map_paths"].get<std::vector<std::string>>());
  for (const auto& path : fx.params()["saved_maps"]) {
    const Tensor ref = fx.tensor(path.get<std::string>());
    EXPECT_TENSOR_NEAR(out.maps.at(path.get<std::string>()), ref, network_tolerance(ref)) << path;
  }
  // forward and run without maps agree with run.
  EXPECT_TENSOR_NEAR(net->forward(x), out.logits, kExact);
  EXPECT_TENSOR_NEAR(net->run(x, false).features, out.features, kExact);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TimmMobileNetwork, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(MobileModelsCreate, ListsTheSupportedModels) {
  const auto& names = models::supported_models();
  for (const char* n : {"mobilenetv3_small_100", "mobilenetv3_large_100", "efficientnet_b0",
                        "efficientnet_cc_b0_4e"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(MobileModelsCreate, MismatchedStateDictIsANamedError) {
  const auto b0 = models::build("efficientnet_b0", 5);
  const StateDict dict = generated_state_dict(*b0, 1).dict;
  EXPECT_NO_THROW((void)models::create("efficientnet_b0", dict));

  StateDict missing = dict;
  missing.erase("blocks.1.0.se.conv_reduce.weight");
  EXPECT_THAT(
      test::Call([&] { (void)models::create("efficientnet_b0", missing); }),
      ThrowsMessage<ValueError>(AllOf(HasSubstr("models::create('efficientnet_b0')"),
                                      HasSubstr("missing 'blocks.1.0.se.conv_reduce.weight'"))));
  StateDict extra = dict;
  extra.set("blocks.0.0.conv_s2d.weight", Tensor::zeros({4}));
  EXPECT_THAT(test::Call([&] { (void)models::create("efficientnet_b0", extra); }),
              ThrowsMessage<ValueError>(HasSubstr("unexpected 'blocks.0.0.conv_s2d.weight'")));
  StateDict wrong = dict;
  wrong.set("blocks.2.1.conv_dw.weight", Tensor::zeros({240, 1, 3, 3}));
  EXPECT_THAT(
      test::Call([&] { (void)models::create("efficientnet_b0", wrong); }),
      ThrowsMessage<ValueError>(HasSubstr("'blocks.2.1.conv_dw.weight' expected [240, 1, 5, 5]")));
  // EfficientNet-B0 weights for its CondConv sibling: the routing keys are missing.
  EXPECT_THAT(test::Call([&] { (void)models::create("efficientnet_cc_b0_4e", dict); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'blocks.4.0.routing_fn.weight'")));
  // ... and for MobileNetV3 the classifier is not even the right width.
  EXPECT_THAT(test::Call([&] { (void)models::create("mobilenetv3_small_100", dict); }),
              ThrowsMessage<ValueError>(HasSubstr("models::create('mobilenetv3_small_100')")));
  StateDict no_head = dict;
  no_head.erase("classifier.weight");
  EXPECT_THAT(test::Call([&] { (void)models::create("efficientnet_b0", no_head); }),
              ThrowsMessage<ValueError>(HasSubstr("no classifier weight 'classifier.weight'")));
}

TEST(MobileModelsCreate, AcceptsNumBatchesTracked) {
  const auto net = models::build("mobilenetv3_small_100", 3);
  StateDict dict = generated_state_dict(*net, 2).dict;
  dict.set("blocks.0.0.bn1.num_batches_tracked", Tensor::zeros({}), /*integer=*/true);
  EXPECT_NO_THROW((void)models::create("mobilenetv3_small_100", dict));
}

TEST(MobileNetwork, RejectsWrongInput) {
  const auto net = models::build("mobilenetv3_small_100", 4);
  EXPECT_THAT(
      test::Call([&] {
        (void)net->forward(Tensor::zeros({1, 4, 32, 32}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, 3, *, *], got [1, 4, 32, 32]")));
  const auto b0 = models::build("efficientnet_b0", 4);
  EXPECT_THAT(test::Call([&] {
                (void)b0->forward(Tensor::zeros({3, 32, 32}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("EfficientNet::forward")));
}

TEST(MobileNetwork, RunsTinyAndOddInputs) {
  for (const char* name : {"mobilenetv3_large_100", "efficientnet_cc_b0_4e"}) {
    const auto net = models::build(name, 5);
    net->load_state_dict(generated_state_dict(*net, 3).dict);
    for (const Shape& s : {Shape{1, 3, 1, 1}, Shape{2, 3, 7, 5}, Shape{1, 3, 33, 17}}) {
      const models::NetworkOutput out = net->run(generated("input", s, 4));
      EXPECT_EQ(out.logits.shape(), (Shape{s[0], 5})) << name;
      EXPECT_TRUE(out.logits.all_finite()) << name;
    }
  }
}

TEST(MobileNetwork, ForwardIsThreadSafe) {
  for (const char* name : {"mobilenetv3_small_100", "efficientnet_cc_b0_4e"}) {
    const auto net = models::build(name, 6);
    net->load_state_dict(generated_state_dict(*net, 5).dict);
    const Tensor x = generated("input", {2, 3, 40, 24}, 6);
    const models::NetworkOutput serial = net->run(x);
    std::vector<models::NetworkOutput> results(2);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < results.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = net->run(x); });
    }
    for (auto& t : threads) t.join();
    for (const auto& r : results) {
      EXPECT_TENSOR_NEAR(r.logits, serial.logits, kExact) << name;
      for (const auto& [path, map] : serial.maps.items()) {
        EXPECT_TENSOR_NEAR(r.maps.at(path), map, kExact) << name << " " << path;
      }
    }
  }
}

TEST(MobileArch, DecodesTimmBlockStrings) {
  const models::MobileBlockArgs ir =
      models::decode_block_string("ir_r3_k5_s2_e3.67_c40_se0.25_nre");
  EXPECT_EQ(ir.type, models::MobileBlockType::inverted_residual);
  EXPECT_EQ(ir.repeats, 3);
  EXPECT_EQ(ir.kernel_size, 5);
  EXPECT_EQ(ir.stride, 2);
  EXPECT_DOUBLE_EQ(ir.exp_ratio, 3.67);
  EXPECT_EQ(ir.out_chs, 40);
  EXPECT_DOUBLE_EQ(ir.se_ratio, 0.25);
  ASSERT_TRUE(ir.act.has_value());
  EXPECT_EQ(*ir.act, ActLayer::relu);
  EXPECT_FALSE(ir.noskip);
  EXPECT_EQ(ir.num_experts, 0);
  const models::MobileBlockArgs cc = models::decode_block_string("ir_r1_k3_s1_e6_c320_se0.25_cc4");
  EXPECT_EQ(cc.num_experts, 4);
  EXPECT_FALSE(cc.act.has_value());
  const models::MobileBlockArgs dsa = models::decode_block_string("dsa_r1_k3_s1_c16_nhs");
  EXPECT_EQ(dsa.type, models::MobileBlockType::depthwise_separable);
  EXPECT_TRUE(dsa.pw_act);
  EXPECT_TRUE(dsa.noskip);
  EXPECT_EQ(*dsa.act, ActLayer::hard_swish);
  const models::MobileBlockArgs cn = models::decode_block_string("cn_r1_k1_s1_c576_skip");
  EXPECT_EQ(cn.type, models::MobileBlockType::conv_bn_act);
  EXPECT_TRUE(cn.skip);
  const auto stages =
      models::decode_arch_def({{"ds_r1_k3_s1_c16"}, {"ir_r2_k3_s2_e6_c24", "ir_r1_k3_s1_e6_c24"}});
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[1].size(), 3u);
}

TEST(MobileArch, RejectsWhatItDoesNotBuild) {
  EXPECT_THAT(test::Call([] { (void)models::decode_block_string("er_r1_k3_s1_e4_c24"); }),
              ThrowsMessage<ValueError>(HasSubstr("block type 'er' is not built")));
  EXPECT_THAT(test::Call([] { (void)models::decode_block_string("ir_r1_k3_s1_e4_c24_gs8"); }),
              ThrowsMessage<ValueError>(HasSubstr("option 'gs' is not built")));
  EXPECT_THAT(test::Call([] { (void)models::decode_block_string("ir_r1_k3.5_s1_e4_c24"); }),
              ThrowsMessage<ValueError>(HasSubstr("option 'k' expects an integer")));
  EXPECT_THAT(test::Call([] { (void)models::decode_block_string("ir_r1_k3_s3_e4_c24"); }),
              ThrowsMessage<ValueError>(HasSubstr("s 1 or 2")));
  EXPECT_THAT(test::Call([] { (void)models::decode_block_string("ir_k3_s1_e4_c24"); }),
              ThrowsMessage<ValueError>(HasSubstr("r, k, s and c are required")));
  EXPECT_THAT(test::Call([] { (void)models::decode_block_string("ds_r1_k3_s1_c16_cc4"); }),
              ThrowsMessage<ValueError>(HasSubstr("only on 'ir' blocks")));
}

TEST(MobileArch, MakeDivisibleIsTimms) {
  // timm.layers.make_divisible(v): 88.08 -> 88, 4 -> 8 (min divisor), 37 -> 40, 12 -> 16
  // (8 < 0.9 * 12 adds a divisor), 1280 -> 1280.
  EXPECT_EQ(models::make_divisible(24 * 3.67), 88);
  EXPECT_EQ(models::make_divisible(4.0), 8);
  EXPECT_EQ(models::make_divisible(37.0), 40);
  EXPECT_EQ(models::make_divisible(11.0), 16);
  EXPECT_EQ(models::make_divisible(1280.0), 1280);
  EXPECT_EQ(models::round_channels(1280, 1.1), 1408);
  EXPECT_THAT(test::Call([] { (void)models::make_divisible(-1.0); }),
              ThrowsMessage<ValueError>(HasSubstr("make_divisible")));
}

TEST(MobileBlocks, ShortcutOnlyWhereTimmTakesIt) {
  using models::MobileBlockOptions;
  EXPECT_TRUE(models::InvertedResidual(MobileBlockOptions(16, 16).exp_ratio(4)).has_skip());
  EXPECT_FALSE(models::InvertedResidual(MobileBlockOptions(16, 16).stride(2)).has_skip());
  EXPECT_FALSE(models::InvertedResidual(MobileBlockOptions(16, 24)).has_skip());
  EXPECT_FALSE(models::InvertedResidual(MobileBlockOptions(16, 16).noskip(true)).has_skip());
  EXPECT_FALSE(models::ConvBnAct(MobileBlockOptions(16, 16).kernel_size(1)).has_skip());
  EXPECT_TRUE(models::ConvBnAct(MobileBlockOptions(16, 16).kernel_size(1).skip(true)).has_skip());
  EXPECT_FALSE(models::DepthwiseSeparableConv(MobileBlockOptions(16, 16).pw_act(true)).has_skip());
  EXPECT_EQ(models::InvertedResidual(MobileBlockOptions(24, 24).exp_ratio(3.67)).mid_channels(),
            88);
  EXPECT_THAT(test::Call([] { models::CondConvResidual b(MobileBlockOptions(16, 16)); }),
              ThrowsMessage<ValueError>(HasSubstr("num_experts must be >= 1")));
  const models::SqueezeExcite se(models::SqueezeExciteOptions(8, 2));
  EXPECT_THAT(test::Call([&] {
                (void)se.forward(Tensor::zeros({1, 4, 3, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("SqueezeExcite::forward")));
}

}  // namespace
}  // namespace cvattn::test
