// timm's self-attention ByobNets (issue 20): botnet26t_256, halonet26t, lambda_resnet26t
// against timm's own forward (tests/fixtures/models_byob.py): logits, pooled features, CAM and
// the attention maps by module path (row slices), with weights regenerated bit for bit from
// the case's seed (tests/support/model_weights.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/models/byobnet.hpp"
#include "cvattn/models/timm.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/map_rows.hpp"
#include "support/model_fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const Fixture& fx : fixtures_in("models_byob")) names.push_back(fx.name());
  return names;
}

// The case's network: through models::create, or, for cases with ByoModelCfg overrides
// ("cfg": {"downsample": "avg"}), built from ByobNetOptions with the same generated weights.
std::shared_ptr<models::Network> byob_network_for(const Fixture& fx) {
  const auto& cfg = fx.params()["cfg"];
  if (cfg.empty()) return network_for(fx);
  const std::string name = fx.params()["model_name"].get<std::string>();
  models::ByobNetOptions o =
      models::byoanet_options(name).num_classes(fx.params()["num_classes"].get<std::int64_t>());
  for (const auto& [key, value] : cfg.items()) {
    EXPECT_EQ(key, "downsample") << "models_byob.py: unknown cfg override";
    EXPECT_EQ(value.get<std::string>(), "avg");
    o.downsample(models::ByobDownsample::avg);
  }
  auto net = std::make_shared<models::ByobNet>(o);
  GeneratedWeights w = generated_state_dict(*net, fx.params()["seed"].get<std::uint64_t>());
  EXPECT_EQ(hex(w.checksum), fx.params()["checksum"].get<std::string>()) << fx.name();
  net->load_state_dict(w.dict, Strict::yes);
  return net;
}

class TimmByob : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmByob, MatchesTimm) {
  const Fixture fx = fixture("models_byob/" + GetParam());
  const auto net = byob_network_for(fx);
  ASSERT_EQ(net->model_name(), fx.params()["model_name"].get<std::string>());
  const Tensor x = input_for(fx);
  const models::NetworkOutput out = net->run(x);

  const Tensor logits = fx.tensor("output");
  EXPECT_TENSOR_NEAR(out.logits, logits, network_tolerance(logits));
  const Tensor features = fx.tensor("features");
  EXPECT_TENSOR_NEAR(out.features, features, network_tolerance(features));
  EXPECT_EQ(out.feature_map.shape(), shape_of(fx.params()["feature_map_shape"]));
  ASSERT_TRUE(net->has_class_activation_map());
  const Tensor cam = fx.tensor("cam");
  EXPECT_TENSOR_NEAR(net->class_activation_map(out), cam, network_tolerance(cam));

  // Every map timm computes, under timm's module path, in forward order, with timm's shape.
  std::vector<std::string> paths;
  for (const auto& item : out.maps.items()) paths.push_back(item.first);
  EXPECT_EQ(paths, fx.params()["map_paths"].get<std::vector<std::string>>());
  for (const auto& [path, shape] : fx.params()["map_shapes"].items()) {
    EXPECT_EQ(out.maps.at(path).shape(), shape_of(shape)) << path;
  }
  for (const auto& p : fx.params()["saved_maps"]) {
    const std::string path = p.get<std::string>();
    const auto rows = fx.params()["map_rows"][path].get<std::vector<std::int64_t>>();
    const Tensor ref = fx.tensor(path + "_rows");
    EXPECT_TENSOR_NEAR(rows_of_map(out.maps.at(path), rows), ref, network_tolerance(ref)) << path;
  }
  // forward and forward_with_maps agree with run.
  EXPECT_TENSOR_NEAR(net->forward(x), out.logits, kExact);
  EXPECT_TENSOR_NEAR(net->forward_with_maps(x).output, out.logits, kExact);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TimmByob, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(ByobNet, ListedAmongTheSupportedModels) {
  const auto& names = models::supported_models();
  for (const char* n : {"botnet26t_256", "halonet26t", "lambda_resnet26t"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(ByobNet, MismatchedStateDictIsANamedError) {
  const auto bot = models::build("botnet26t_256", 5);
  const StateDict dict = generated_state_dict(*bot, 1).dict;
  EXPECT_NO_THROW((void)models::create("botnet26t_256", dict));
  // BoTNet weights for HaloNet: the attention keys differ.
  EXPECT_THAT(
      test::Call([&] { (void)models::create("halonet26t", dict); }),
      ThrowsMessage<ValueError>(AllOf(HasSubstr("models::create('halonet26t')"),
                                      HasSubstr("missing 'stages.2.1.self_attn.q.weight'"),
                                      HasSubstr("unexpected 'stages.2.1.self_attn.qkv.weight'"))));
  // ... and for the lambda network the qkv widths differ.
  EXPECT_THAT(test::Call([&] { (void)models::create("lambda_resnet26t", dict); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("'stages.2.1.self_attn.qkv.weight' expected [144, 256, 1, 1]")));
  // A BoTNet trained at another img_size: the relative-position tables do not fit.
  StateDict other = dict;
  other.set("stages.2.1.self_attn.pos_embed.height_rel", Tensor::zeros({39, 64}));
  EXPECT_THAT(test::Call([&] { (void)models::create("botnet26t_256", other); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("'stages.2.1.self_attn.pos_embed.height_rel' expected [31, 64]")));
  StateDict no_fc = dict;
  no_fc.erase("head.fc.weight");
  EXPECT_THAT(test::Call([&] { (void)models::create("botnet26t_256", no_fc); }),
              ThrowsMessage<ValueError>(HasSubstr("no classifier weight 'head.fc.weight'")));
  StateDict resnet_style = dict;
  resnet_style.set("fc.weight", Tensor::zeros({5, 2048}));
  EXPECT_THAT(test::Call([&] { (void)models::create("botnet26t_256", resnet_style); }),
              ThrowsMessage<ValueError>(HasSubstr("unexpected 'fc.weight'")));
  StateDict with_counter = dict;
  with_counter.set("stages.2.1.post_attn.num_batches_tracked", Tensor::zeros({}), true);
  EXPECT_NO_THROW((void)models::create("botnet26t_256", with_counter));
}

TEST(ByobNet, BotNetInputSizeIsFixed) {
  const auto net = models::build("botnet26t_256", 3);
  EXPECT_THAT(
      test::Call([&] {
        (void)net->forward(Tensor::zeros({1, 3, 224, 224}));
      }),
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("botnet26t_256::forward"),
                                      HasSubstr("fixed at 256x256"), HasSubstr("got 224x224"))));
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({1, 4, 256, 256}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, 3, *, *]")));
}

TEST(ByobNet, HaloNetNeedsWholeBlocks) {
  const auto net = models::build("halonet26t", 3);
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({1, 3, 256, 224}));
              }),
              ThrowsMessage<ShapeError>(
                  AllOf(HasSubstr("halonet26t::forward"), HasSubstr("multiples of 256"))));
}

TEST(ByobNet, LambdaNetOddMapIsANamedError) {
  // 160 + 16: the stride-2 lambda block sees an odd 11 x 7 map (timm fails there too).
  const auto net = models::build("lambda_resnet26t", 2);
  net->load_state_dict(generated_state_dict(*net, 3).dict);
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(generated("input", {1, 3, 176, 96}, 1));
              }),
              ThrowsMessage<ShapeError>(
                  AllOf(HasSubstr("SelfAttnBlock"), HasSubstr("does not match the residual"))));
  // Any multiple of 32 runs.
  const models::NetworkOutput out = net->run(generated("input", {1, 3, 96, 64}, 2));
  EXPECT_EQ(out.logits.shape(), (Shape{1, 2}));
  EXPECT_TRUE(out.logits.all_finite());
  EXPECT_TRUE(out.maps.items().empty());  // lambda layers have no attention map
}

TEST(ByobNet, BlocksAreReusable) {
  models::SelfAttnConfig halo;
  halo.layer = models::SelfAttnLayer::halo;
  halo.block_size = 4;
  halo.halo_size = 1;
  const models::SelfAttnBlock block(
      models::ByobBlockOptions(16, 32).stride(2).bottle_ratio(0.5).self_attn(halo));
  EXPECT_EQ(block.mid_channels(), 16);
  const Attended a = block.forward_with_maps(generated("input", {2, 16, 8, 8}, 3));
  EXPECT_EQ(a.output.shape(), (Shape{2, 32, 4, 4}));
  ASSERT_EQ(a.maps.items().size(), 1U);
  EXPECT_EQ(a.maps.items()[0].first, "self_attn.attention");
  const models::BottleneckBlock bottle(models::ByobBlockOptions(8, 8));
  EXPECT_EQ(bottle.state_dict().find("shortcut.conv.weight"), nullptr);  // identity shortcut
  EXPECT_THAT(test::Call([] { models::SelfAttnBlock b(models::ByobBlockOptions(8, 8)); }),
              ThrowsMessage<ValueError>(HasSubstr("BottleneckAttn needs feat_size")));
  EXPECT_THAT(test::Call([] { (void)models::byoanet_options("botnet50ts_256"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown model_name 'botnet50ts_256'")));
}

TEST(ByobNet, ForwardIsThreadSafe) {
  const auto net = models::build("halonet26t", 4);
  net->load_state_dict(generated_state_dict(*net, 5).dict);
  const Tensor x = generated("input", {1, 3, 256, 256}, 6);
  const models::NetworkOutput serial = net->run(x);
  std::vector<models::NetworkOutput> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = net->run(x); });
  }
  for (auto& t : threads) t.join();
  for (const models::NetworkOutput& r : results) {
    EXPECT_TENSOR_NEAR(r.logits, serial.logits, kExact);
    for (const auto& [path, map] : serial.maps.items()) {
      EXPECT_TENSOR_NEAR(r.maps.at(path), map, kExact) << path;
    }
  }
}

}  // namespace
}  // namespace cvattn::test
