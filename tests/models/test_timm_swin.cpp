// timm's Swin Transformer and ResNeSt networks (issue 20) against timm's own forward
// (tests/fixtures/models_swin.py): logits, pooled features, class activation maps, the window
// attention maps by module path (shift masks applied) and ResNeSt's split-attention maps, with
// weights regenerated bit for bit from each case's seed; and the window functional ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/tensor_ops.hpp"
#include "cvattn/functional/window_attention.hpp"
#include "cvattn/models/resnet.hpp"
#include "cvattn/models/swin_transformer.hpp"
#include "cvattn/models/timm.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/model_fixtures.hpp"
#include "support/model_weights.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
namespace F = cvattn::functional;

std::vector<std::string> cases_with(const std::string& prefix) {
  std::vector<std::string> names;
  for (const Fixture& fx : fixtures_in("models_swin", prefix)) names.push_back(fx.name());
  return names;
}

std::vector<std::int64_t> ints(const nlohmann::json& j) {
  return j.get<std::vector<std::int64_t>>();
}

// The case's network: through models::create for the registered model, else (timm kwargs of a
// reduced variant) a SwinTransformer with those options and the same generated weights.
std::shared_ptr<models::Network> swin_for(const Fixture& fx) {
  const nlohmann::json& kw = fx.params()["kwargs"];
  if (kw.empty()) return network_for(fx);
  models::SwinTransformerOptions o;
  o.model_name(fx.params()["model_name"].get<std::string>())
      .num_classes(fx.params()["num_classes"].get<std::int64_t>());
  if (kw.contains("img_size")) {
    o.img_size(kw["img_size"].is_array() ? pair(kw["img_size"])
                                         : Pair2(kw["img_size"].get<std::int64_t>()));
  }
  if (kw.contains("window_size")) o.window_size(Pair2(kw["window_size"].get<std::int64_t>()));
  if (kw.contains("embed_dim")) o.embed_dim(kw["embed_dim"].get<std::int64_t>());
  if (kw.contains("depths")) o.depths(ints(kw["depths"]));
  if (kw.contains("num_heads")) o.num_heads(ints(kw["num_heads"]));
  if (kw.contains("mlp_ratio")) o.mlp_ratio(kw["mlp_ratio"].get<double>());
  auto net = std::make_shared<models::SwinTransformer>(o);
  const GeneratedWeights w = generated_state_dict(*net, fx.params()["seed"].get<std::uint64_t>());
  EXPECT_EQ(hex(w.checksum), fx.params()["checksum"].get<std::string>())
      << fx.name() << ": the C++ weight generator differs from models.py";
  net->load_state_dict(w.dict);
  return net;
}

// map [B, H, A, A] at the given windows and query rows -> [windows, H, rows, A].
Tensor window_rows(const Tensor& map, const std::vector<std::int64_t>& windows,
                   const std::vector<std::int64_t>& rows) {
  const std::int64_t h = map.dim(1), a = map.dim(2);
  const auto nw = static_cast<std::int64_t>(windows.size());
  const auto nr = static_cast<std::int64_t>(rows.size());
  Tensor out = Tensor::empty({nw, h, nr, a});
  float* dst = out.data();
  for (const std::int64_t w : windows) {
    for (std::int64_t k = 0; k < h; ++k) {
      for (const std::int64_t r : rows)
        dst = std::copy_n(map.data() + ((w * h + k) * a + r) * a, a, dst);
    }
  }
  return out;
}

class TimmSwin : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmSwin, MatchesTimm) {
  const Fixture fx = fixture("models_swin/" + GetParam());
  const auto net = swin_for(fx);
  const models::NetworkOutput out = net->run(input_for(fx));
  for (const char* name : {"output", "features"}) {
    const Tensor ref = fx.tensor(name);
    EXPECT_TENSOR_NEAR(std::string(name) == "output" ? out.logits : out.features, ref,
                       network_tolerance(ref))
        << name;
  }
  EXPECT_EQ(out.feature_map.shape(), shape_of(fx.params()["feature_map_shape"]));
  ASSERT_TRUE(net->has_class_activation_map());
  EXPECT_FALSE(net->has_rollout());
  const Tensor cam = fx.tensor("cam");
  EXPECT_TENSOR_NEAR(net->class_activation_map(out), cam, network_tolerance(cam));

  // Every block's window and shift after timm's clamp to its resolution.
  for (const auto& b : fx.params()["blocks"]) {
    const auto* block =
        dynamic_cast<const models::SwinTransformerBlock*>(&net->find(b["path"].get<std::string>()));
    ASSERT_NE(block, nullptr) << b["path"];
    EXPECT_EQ(block->window_size(), pair(b["window_size"])) << b["path"];
    EXPECT_EQ(block->shift_size(), pair(b["shift_size"])) << b["path"];
    EXPECT_EQ(block->options().input_resolution(), pair(b["input_resolution"])) << b["path"];
  }
  // Every map timm computes, under timm's module path, in forward order, in its shape.
  std::vector<std::string> paths;
  for (const auto& item : out.maps.items()) {
    paths.push_back(item.first);
    EXPECT_EQ(item.second.shape(), shape_of(fx.params()["map_shapes"][item.first])) << item.first;
  }
  EXPECT_EQ(paths, fx.params()["map_paths"].get<std::vector<std::string>>());
  for (const auto& p : fx.params()["saved_maps"]) {
    const std::string path = p.get<std::string>();
    const Tensor& map = out.maps.at(path);
    const Tensor mean = fx.tensor(path + "_mean");
    EXPECT_TENSOR_NEAR(F::mean(map, {2}), mean, network_tolerance(mean)) << path;
    const Tensor rows = fx.tensor(path + "_rows");
    EXPECT_TENSOR_NEAR(
        window_rows(map, ints(fx.params()["windows"][path]), ints(fx.params()["rows"][path])), rows,
        network_tolerance(rows))
        << path;
  }
  EXPECT_TENSOR_NEAR(net->forward(input_for(fx)), out.logits, kExact);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TimmSwin, ::testing::ValuesIn(cases_with("swin")),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(SwinTransformer, FixturesCoverTheRealModel) {
  const auto names = cases_with("swin_tiny_patch4_window7_224");
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(fixture("models_swin/" + names[0]).params()["input_shape"][0], 2);
  const auto& supported = models::supported_models();
  EXPECT_NE(std::find(supported.begin(), supported.end(), "swin_tiny_patch4_window7_224"),
            supported.end());
}

TEST(SwinTransformer, StrictLoadingNamesTheKeys) {
  const auto skeleton = models::build("swin_tiny_patch4_window7_224", 6);
  const StateDict dict = generated_state_dict(*skeleton, 3).dict;
  const auto net = models::create("swin_tiny_patch4_window7_224", dict);
  EXPECT_EQ(net->num_classes(), 6);
  EXPECT_EQ(net->num_features(), 768);
  StateDict missing = dict;
  missing.erase("layers.0.blocks.1.attn.relative_position_bias_table");
  EXPECT_THAT(test::Call([&] { (void)models::create("swin_tiny_patch4_window7_224", missing); }),
              ThrowsMessage<ValueError>(AllOf(
                  HasSubstr("models::create('swin_tiny_patch4_window7_224')"),
                  HasSubstr("missing 'layers.0.blocks.1.attn.relative_position_bias_table'"))));
  // The non-persistent buffers of older checkpoints are not part of timm's state_dict.
  StateDict extra = dict;
  extra.set("layers.0.blocks.0.attn.relative_position_index", Tensor::zeros({49, 49}));
  EXPECT_THAT(test::Call([&] { (void)models::create("swin_tiny_patch4_window7_224", extra); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("unexpected 'layers.0.blocks.0.attn.relative_position_index'")));
  StateDict wrong = dict;
  wrong.set("layers.1.downsample.reduction.weight", Tensor::zeros({192, 192}));
  EXPECT_THAT(test::Call([&] { (void)models::create("swin_tiny_patch4_window7_224", wrong); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "'layers.1.downsample.reduction.weight' expected [192, 384], got [192, 192]")));
  // An old-style classifier key ('head.weight', before timm's ClassifierHead).
  StateDict old = dict;
  old.set("head.weight", old.at("head.fc.weight"));
  old.erase("head.fc.weight");
  EXPECT_THAT(test::Call([&] { (void)models::create("swin_tiny_patch4_window7_224", old); }),
              ThrowsMessage<ValueError>(HasSubstr("no classifier weight 'head.fc.weight'")));
}

TEST(SwinTransformer, RefusesOtherImageSizesAsTimmDoes) {
  const auto net = models::build("swin_tiny_patch4_window7_224", 4);
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({1, 3, 192, 224}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("expected [N >= 1, 3, 224, 224] (timm's default strict img_size), got "
                            "[1, 3, 192, 224]")));
  EXPECT_THAT(test::Call([&] { (void)net->rollout(models::NetworkOutput{}); }),
              ThrowsMessage<ValueError>(HasSubstr("no attention rollout")));
  EXPECT_THAT(test::Call([] {
                models::SwinTransformer bad(
                    models::SwinTransformerOptions().depths({2, 2}).num_heads({3, 6, 12}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("must have the same non-zero length")));
  EXPECT_THAT(test::Call([] { models::WindowAttention bad(96, 5, Pair2(7)); }),
              ThrowsMessage<ValueError>(HasSubstr("num_heads (5) must divide dim (96)")));
}

TEST(SwinTransformer, ForwardIsThreadSafeAndMapsDoNotChangeIt) {
  const auto net = std::make_shared<models::SwinTransformer>(models::SwinTransformerOptions()
                                                                 .img_size(Pair2(64, 96))
                                                                 .embed_dim(16)
                                                                 .depths({2, 2})
                                                                 .num_heads({2, 4})
                                                                 .num_classes(5));
  net->load_state_dict(generated_state_dict(*net, 21).dict);
  const Tensor x = generated("input", {2, 3, 64, 96}, 22);
  const models::NetworkOutput serial = net->run(x, true);
  EXPECT_TENSOR_NEAR(net->run(x, false).logits, serial.logits, (Tolerance{1e-6, 1e-6}));
  std::vector<Tensor> results(2);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = net->run(x, true).logits; });
  }
  for (auto& t : threads) t.join();
  for (const Tensor& r : results) EXPECT_TENSOR_NEAR(r, serial.logits, kExact);
}

// ---------------------------------------------------------------------------------------------
// ResNeSt

class TimmResNest : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmResNest, MatchesTimm) {
  const Fixture fx = fixture("models_swin/" + GetParam());
  const auto net = network_for(fx);
  const models::NetworkOutput out = net->run(input_for(fx));
  for (const char* name : {"output", "features", "cam"}) {
    const Tensor ref = fx.tensor(name);
    const Tensor got = std::string(name) == "output"     ? out.logits
                       : std::string(name) == "features" ? out.features
                                                         : net->class_activation_map(out);
    EXPECT_TENSOR_NEAR(got, ref, network_tolerance(ref)) << name;
  }
  EXPECT_EQ(out.feature_map.shape(), shape_of(fx.params()["feature_map_shape"]));
  std::vector<std::string> paths;
  for (const auto& item : out.maps.items()) paths.push_back(item.first);
  EXPECT_EQ(paths, fx.params()["map_paths"].get<std::vector<std::string>>());
  for (const auto& p : fx.params()["saved_maps"]) {
    const Tensor ref = fx.tensor(p.get<std::string>());
    EXPECT_TENSOR_NEAR(out.maps.at(p.get<std::string>()), ref, network_tolerance(ref)) << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TimmResNest, ::testing::ValuesIn(cases_with("resnest")),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(ResNest, StrictLoadingAndThreads) {
  const auto skeleton = models::build("resnest14d", 4);
  const StateDict dict = generated_state_dict(*skeleton, 31).dict;
  StateDict missing = dict;
  missing.erase("layer2.0.conv2.bn0.running_var");
  EXPECT_THAT(
      test::Call([&] { (void)models::create("resnest14d", missing); }),
      ThrowsMessage<ValueError>(AllOf(HasSubstr("models::create('resnest14d')"),
                                      HasSubstr("missing 'layer2.0.conv2.bn0.running_var'"))));
  // resnest14d weights are not resnest26d's: its second blocks are missing.
  EXPECT_THAT(test::Call([&] { (void)models::create("resnest26d", dict); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'layer1.1.conv1.weight'")));
  EXPECT_THAT(test::Call([] {
                models::ResNestBottleneck b(models::ResNetBlockOptions(64, 64).reduce_first(2));
              }),
              ThrowsMessage<ValueError>(HasSubstr("only reduce_first 1 and no attn_layer")));
  const auto net = models::create("resnest14d", dict);
  const Tensor x = generated("input", {1, 3, 45, 38}, 32);
  const models::NetworkOutput serial = net->run(x);
  EXPECT_EQ(serial.maps.at("layer3.0.conv2.attention").shape(), (Shape{1, 2, 256}));
  std::vector<Tensor> results(2);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = net->run(x).logits; });
  }
  for (auto& t : threads) t.join();
  for (const Tensor& r : results) EXPECT_TENSOR_NEAR(r, serial.logits, kExact);
}

// ---------------------------------------------------------------------------------------------
// Window functional ops

TEST(WindowPartition, RoundTripsWithShiftAndPadding) {
  const Tensor x = random_tensor({2, 9, 11, 3}, 5);
  for (const auto& [window, shift] : {std::pair<Pair2, Pair2>{Pair2(3), Pair2(0)},
                                      {Pair2(4, 5), Pair2(2, 1)},
                                      {Pair2(9, 11), Pair2(4, 5)}}) {
    const Tensor w = F::window_partition(x, window, shift);
    EXPECT_EQ(w.dim(0), 2 * F::window_count(Pair2(9, 11), window));
    EXPECT_TENSOR_NEAR(F::window_reverse(w, Pair2(9, 11), window, shift), x, kExact);
  }
  // Hand-checkable: a 1x3 row, window 1x2, shift 1: rolled (b, c, a), windows (b, c), (a, 0).
  const Tensor row = Tensor::from_vector({1, 1, 3, 1}, {1, 2, 3});
  const Tensor expected = Tensor::from_vector({2, 2, 1}, {2, 3, 1, 0});
  EXPECT_TENSOR_NEAR(F::window_partition(row, Pair2(1, 2), Pair2(0, 1)), expected, kExact);
  EXPECT_THAT(test::Call([&] { (void)F::window_partition(x, Pair2(3), Pair2(3, 0)); }),
              ThrowsMessage<ValueError>(HasSubstr("must be smaller than the window")));
  EXPECT_THAT(test::Call([&] {
                (void)F::window_reverse(Tensor::zeros({5, 9, 3}), Pair2(9, 11), Pair2(3));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected [N * 12, 9, C]")));
}

TEST(ShiftedWindowMask, HandCheckable) {
  // 4x4 map, window 2, shift 1: labels per axis (0, 0, 1, 2) -> window (0, 0) one region, window
  // (0, 1) columns split in two, window (1, 1) four regions.
  const Tensor m = F::shifted_window_mask(Pair2(4), Pair2(2), Pair2(1));
  ASSERT_EQ(m.shape(), (Shape{4, 4, 4}));
  const float x = F::kShiftedWindowMaskValue;
  auto window = [&](std::int64_t w) { return F::narrow(m, 0, w, 1).reshape({4, 4}); };
  EXPECT_TENSOR_NEAR(window(0), Tensor::zeros({4, 4}), kExact);
  // Tokens (0,2) (0,3) (1,2) (1,3): labels 1, 2, 1, 2.
  EXPECT_TENSOR_NEAR(window(1),
                     Tensor::from_vector({4, 4}, {0, x, 0, x, x, 0, x, 0, 0, x, 0, x, x, 0, x, 0}),
                     kExact);
  EXPECT_TENSOR_NEAR(window(3),
                     Tensor::from_vector({4, 4}, {0, x, x, x, x, 0, x, x, x, x, 0, x, x, x, x, 0}),
                     kExact);
}

TEST(WindowAttention, EqualsPlainAttentionPerWindow) {
  // 4 windows (2 per sample) of 6 tokens, 2 heads of 5: window_attention from the packed qkv
  // against scaled_dot_product_attention on each head's slices with the window's bias.
  const std::int64_t b = 4, a = 6, heads = 2, e = 5, c = heads * e;
  const Tensor qkv = random_tensor({b, a, 3 * c}, 7);
  const Tensor bias = random_tensor({2, heads, a, a}, 8);
  const F::AttentionResult r = F::window_attention(qkv, heads, bias);
  ASSERT_EQ(r.attn_weights.shape(), (Shape{b, heads, a, a}));
  for (std::int64_t w = 0; w < b; ++w) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const Tensor win = F::select(qkv, 0, w);
      auto part = [&](std::int64_t k) { return F::narrow(win, 1, k * c + h * e, e); };
      const Tensor mask = F::select(F::select(bias, 0, w % 2), 0, h);
      const F::AttentionResult ref =
          F::scaled_dot_product_attention(part(0), part(1), part(2), mask);
      EXPECT_TENSOR_NEAR(F::narrow(F::select(r.output, 0, w), 1, h * e, e), ref.output,
                         (Tolerance{1e-6, 1e-5}));
      EXPECT_TENSOR_NEAR(F::select(F::select(r.attn_weights, 0, w), 0, h), ref.attn_weights,
                         (Tolerance{1e-6, 1e-5}));
    }
  }
  EXPECT_THAT(test::Call([&] { (void)F::window_attention(qkv, 4); }),
              ThrowsMessage<ShapeError>(HasSubstr("expected [B, A, 3 * num_heads * E]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::window_attention(qkv, heads, random_tensor({3, heads, a, a}, 1));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("3 windows, which must divide the 4")));
}

TEST(MergePatches, OrderAndPadding) {
  // 3x3 map of 1 channel, values 1..9: padded to 4x4; block k = 2 * dw + dh.
  const Tensor x = Tensor::from_vector({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor expected =
      Tensor::from_vector({1, 2, 2, 4}, {1, 4, 2, 5, 3, 6, 0, 0, 7, 0, 8, 0, 9, 0, 0, 0});
  EXPECT_TENSOR_NEAR(F::merge_patches(x), expected, kExact);
}

}  // namespace
}  // namespace cvattn::test
