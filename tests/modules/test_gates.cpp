// timm's channel gates: EffectiveSEModule, CecaModule, LightCbamModule, GatherExcite,
// GlobalContext, CoordAttn, SplitAttn
// (tests/fixtures/gates.py runs timm's own classes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/modules/ceca.hpp"
#include "cvattn/modules/coord_attn.hpp"
#include "cvattn/modules/effective_se.hpp"
#include "cvattn/modules/gather_excite.hpp"
#include "cvattn/modules/global_context.hpp"
#include "cvattn/modules/light_cbam.hpp"
#include "cvattn/modules/split_attn.hpp"
#include "modules/gates_support.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// Runs module on the fixture's input and compares the output and every named map.
template <class M>
void expect_matches(const M& module, const test::Fixture& fx,
                    const std::vector<std::string>& map_names) {
  const Tensor x = fx.tensor("input");
  const Attended r = module.forward_with_maps(x);
  EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  for (const auto& name : map_names) {
    EXPECT_TENSOR_NEAR(r.maps.at(name), fx.tensor(name), test::Tolerance{}) << name;
  }
  EXPECT_TENSOR_NEAR(module.forward(x), r.output, (test::Tolerance{0, 0}));
}

// ---------------------------------------------------------------- EffectiveSqueezeExcitation

TEST(EffectiveSqueezeExcitation, MatchesTimm) {
  const auto cases = test::gate_cases("ese_");
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto o =
        EffectiveSqueezeExcitationOptions::from_state_dict(fx.weights())
            .add_maxpool(test::set_bool(fx, "add_maxpool", false))
            .gate_layer(parse_gate_layer(test::set_value(fx, "gate_layer", "hard_sigmoid")));
    EffectiveSqueezeExcitation m(o);
    m.load_state_dict(fx.weights());
    expect_matches(m, fx, {maps::kAttention});
  }
}

TEST(EffectiveSqueezeExcitation, KeysShapesAndPrefix) {
  const auto fx = test::fixture("gates/ese_c24_default");
  StateDict nested;
  const StateDict flat = fx.weights();
  for (const auto& e : flat.entries()) nested.set("stage.se." + e.key, e.value);
  const auto o = EffectiveSqueezeExcitationOptions::from_state_dict(nested, "stage.se");
  EXPECT_EQ(o.channels(), 24);
  EXPECT_EQ(o.gate_layer(), GateLayer::hard_sigmoid);
  EffectiveSqueezeExcitation m(o);
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  EXPECT_EQ(m.describe(),
            "EffectiveSqueezeExcitation(channels=24, add_maxpool=false, gate_layer=hard_sigmoid)");
  // Zero weights: logits 0, hard_sigmoid(0) = 0.5.
  const Tensor x = test::random_tensor({2, 24, 3, 5}, 4);
  const Attended r = m.forward_with_maps(x);
  EXPECT_EQ(r.maps.at(maps::kAttention).shape(), (Shape{2, 24}));
  for (std::int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(r.output[i], 0.5f * x[i]);
}

TEST(EffectiveSqueezeExcitation, RejectsBadWeightsAndInput) {
  StateDict d;
  d.set("fc.weight", Tensor::zeros({8, 4, 1, 1}));
  EXPECT_THAT(test::Call([&] { (void)EffectiveSqueezeExcitationOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("'fc.weight' expected [C, C, 1, 1]")));
  EXPECT_THAT(
      test::Call([&] { (void)EffectiveSqueezeExcitationOptions::from_state_dict(StateDict()); }),
      ThrowsMessage<ValueError>(HasSubstr("missing 'fc.weight'")));
  const EffectiveSqueezeExcitation m(EffectiveSqueezeExcitationOptions(8));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 4, 3, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, 8, *, *]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 0, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("H, W >= 1")));
  EXPECT_THAT(test::Call([] { (void)parse_gate_layer("swish"); }),
              ThrowsMessage<ValueError>(HasSubstr("expected sigmoid, hard_sigmoid or tanh")));
}

TEST(EffectiveSqueezeExcitation, ForwardIsThreadSafe) {
  EffectiveSqueezeExcitation m(EffectiveSqueezeExcitationOptions(32).add_maxpool(true));
  test::randomise(m, 3);
  const Tensor x = test::random_tensor({3, 32, 9, 7}, 4);
  test::expect_thread_safe([&] { return m.forward(x); });
}

// ---------------------------------------------------------------------------------- Ceca

TEST(Ceca, MatchesTimm) {
  const auto cases = test::gate_cases("ceca_");
  ASSERT_EQ(cases.size(), 6u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto o = CecaOptions::from_state_dict(fx.weights())
                       .gate_layer(parse_gate_layer(test::set_value(fx, "gate_layer", "sigmoid")));
    EXPECT_EQ(o.kernel_size(), fx.params()["kernel_size"].get<std::int64_t>());
    Ceca m(o);
    m.load_state_dict(fx.weights());
    expect_matches(m, fx, {maps::kAttention});
  }
}

TEST(Ceca, KernelSizeFromChannelsAndBias) {
  EXPECT_EQ(Ceca(CecaOptions(64)).kernel_size(), 3);
  EXPECT_EQ(Ceca(CecaOptions(200)).kernel_size(), 5);
  EXPECT_EQ(Ceca(CecaOptions().kernel_size(9)).kernel_size(), 9);
  const Ceca biased(CecaOptions(32).bias(true));
  EXPECT_EQ(biased.state_dict().keys(), (std::vector<std::string>{"conv.weight", "conv.bias"}));
  EXPECT_EQ(biased.describe(), "Ceca(channels=32, kernel_size=3, bias=true, gate_layer=sigmoid)");
}

TEST(Ceca, CircularPaddingWrapsTheChannels) {
  // C = 3, k = 3, taps [1, 0, 0]: g[c] = sigmoid(s[c - 1 mod 3]).
  Ceca m(CecaOptions().kernel_size(3));
  StateDict d;
  d.set("conv.weight", Tensor::from_vector({1, 1, 3}, {1.0f, 0.0f, 0.0f}));
  m.load_state_dict(d);
  const Tensor x = Tensor::from_vector({1, 3, 1, 1}, {1.0f, 2.0f, 3.0f});
  const Tensor g = m.forward_with_maps(x).maps.at(maps::kAttention);
  auto sig = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  EXPECT_TENSOR_NEAR(g, Tensor::from_vector({1, 3}, {sig(3.0f), sig(1.0f), sig(2.0f)}),
                     (test::Tolerance{1e-6, 1e-6}));
}

TEST(Ceca, RejectsPaddingWiderThanTheChannels) {
  const Ceca m(CecaOptions().kernel_size(9));  // padding 4
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 3, 2, 2}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("circular padding 4 (kernel size 9) exceeds "
                                                  "the 3 channels")));
  EXPECT_THAT(test::Call([] { (void)Ceca(CecaOptions().kernel_size(4)); }),
              ThrowsMessage<ValueError>(HasSubstr("kernel_size must be odd")));
  StateDict d;
  d.set("conv.weight", Tensor::zeros({1, 2, 3}));
  EXPECT_THAT(
      test::Call([&] { (void)CecaOptions::from_state_dict(d); }),
      ThrowsMessage<ValueError>(HasSubstr("'conv.weight' expected [1, 1, *], got [1, 2, 3]")));
}

// ------------------------------------------------------------------------------- LightCbam

TEST(LightCbam, MatchesTimm) {
  const auto cases = test::gate_cases("lcbam_");
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto o = LightCbamOptions::from_state_dict(fx.weights())
                       .gate_layer(parse_gate_layer(test::set_value(fx, "gate_layer", "sigmoid")));
    LightCbam m(o);
    m.load_state_dict(fx.weights());
    expect_matches(m, fx, {maps::kChannelAttention, maps::kSpatialAttention});
  }
}

TEST(LightCbam, KeysAndErrors) {
  const LightCbam m(LightCbamOptions(16, 2).mlp_bias(true).spatial_kernel_size(3));
  EXPECT_EQ(m.state_dict().keys(),
            (std::vector<std::string>{
                "channel.fc1.weight", "channel.fc1.bias", "channel.fc2.weight", "channel.fc2.bias",
                "spatial.conv.conv.weight", "spatial.conv.bn.weight", "spatial.conv.bn.bias",
                "spatial.conv.bn.running_mean", "spatial.conv.bn.running_var",
                "spatial.conv.bn.num_batches_tracked"}));
  EXPECT_THAT(test::Call([] { (void)LightCbam(LightCbamOptions(16, 2).spatial_kernel_size(4)); }),
              ThrowsMessage<ValueError>(HasSubstr("spatial_kernel_size must be odd")));
  StateDict d = test::fixture("gates/lcbam_c32_default").weights();
  d.set("spatial.conv.conv.weight", Tensor::zeros({1, 1, 3, 5}));
  EXPECT_THAT(test::Call([&] { (void)LightCbamOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("square kernel")));
}

TEST(LightCbam, ForwardIsThreadSafe) {
  LightCbam m(LightCbamOptions(24, 4));
  test::randomise(m, 9);
  const Tensor x = test::random_tensor({3, 24, 9, 7}, 2);
  test::expect_thread_safe([&] { return m.forward(x); });
}

// ---------------------------------------------------------------------------- GatherExcite

GatherExciteOptions ge_options(const test::Fixture& fx) {
  GatherExciteOptions o = GatherExciteOptions::from_state_dict(fx.weights());
  o.extent(test::set_int(fx, "extent", 0))
      .add_maxpool(test::set_bool(fx, "add_maxpool", false))
      .gate_layer(parse_gate_layer(test::set_value(fx, "gate_layer", "sigmoid")));
  if (o.feat_size() == Pair2(0)) o.feat_size(test::set_pair(fx, "feat_size", Pair2(0)));
  return o;
}

TEST(GatherExcite, MatchesTimm) {
  const auto cases = test::gate_cases("ge_");
  ASSERT_EQ(cases.size(), 11u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    GatherExcite m(ge_options(fx));
    m.load_state_dict(fx.weights());
    expect_matches(m, fx, {maps::kAttention});
  }
}

TEST(GatherExcite, OptionsFromTheWeights) {
  const auto o =
      GatherExciteOptions::from_state_dict(test::fixture("gates/ge_e0_params").weights());
  EXPECT_TRUE(o.extra_params());
  EXPECT_TRUE(o.use_mlp());
  EXPECT_TRUE(o.norm());
  EXPECT_EQ(o.channels(), 16);
  EXPECT_EQ(o.rd_channels(), 1);
  EXPECT_EQ(o.feat_size(), Pair2(5, 7));
  const auto plain =
      GatherExciteOptions::from_state_dict(test::fixture("gates/ge_e0_nomlp").weights());
  EXPECT_FALSE(plain.extra_params());
  EXPECT_FALSE(plain.use_mlp());
  EXPECT_EQ(plain.channels(), 0);  // nothing in the weights is sized by C
  const GatherExcite deep(GatherExciteOptions(8).extra_params(true).extent(8).use_mlp(false));
  EXPECT_EQ(deep.state_dict().keys().size(), 3u * 6u);  // conv + 5 norm entries per stage
  EXPECT_EQ(GatherExcite(GatherExciteOptions(32)).reduced_channels(), 2);
}

TEST(GatherExcite, RejectsInvalidOptionsAndWeights) {
  EXPECT_THAT(test::Call([] { (void)GatherExcite(GatherExciteOptions(8).extent(3)); }),
              ThrowsMessage<ValueError>(HasSubstr("extent must be 0 (global) or a positive even")));
  EXPECT_THAT(test::Call([] { (void)GatherExcite(GatherExciteOptions(8).extra_params(true)); }),
              ThrowsMessage<ValueError>(HasSubstr("feat_size must be given for extent 0")));
  EXPECT_THAT(test::Call([] { (void)GatherExcite(GatherExciteOptions()); }),
              ThrowsMessage<ValueError>(HasSubstr("extra_params and use_mlp need channels")));
  // Extent 4 with params has two gather convs; the extent-8 weights have three.
  const auto fx = test::fixture("gates/ge_e8_params");
  GatherExcite m(GatherExciteOptions::from_state_dict(fx.weights()).extent(4));
  EXPECT_THAT(test::Call([&] { m.load_state_dict(fx.weights()); }),
              ThrowsMessage<ValueError>(HasSubstr("unexpected 'gather.conv3.weight'")));
  StateDict bad = fx.weights();
  bad.set("gather.conv1.weight", Tensor::zeros({16, 2, 3, 3}));
  EXPECT_THAT(test::Call([&] { (void)GatherExciteOptions::from_state_dict(bad); }),
              ThrowsMessage<ValueError>(HasSubstr("'gather.conv1.weight' expected [*, 1, *, *]")));
}

TEST(GatherExcite, ForwardIsThreadSafe) {
  GatherExcite m(GatherExciteOptions(16).extent(4).add_maxpool(true));
  test::randomise(m, 5);
  const Tensor x = test::random_tensor({3, 16, 11, 9}, 6);
  test::expect_thread_safe([&] { return m.forward(x); });
}

// --------------------------------------------------------------------------- GlobalContext

TEST(GlobalContext, MatchesTimm) {
  const auto cases = test::gate_cases("gc_");
  ASSERT_EQ(cases.size(), 5u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto o = GlobalContextOptions::from_state_dict(fx.weights())
                       .gate_layer(parse_gate_layer(test::set_value(fx, "gate_layer", "sigmoid")));
    GlobalContext m(o);
    m.load_state_dict(fx.weights());
    std::vector<std::string> names;
    if (fx.has("attention")) names.push_back(maps::kAttention);
    if (fx.has("channel_attention")) names.push_back(maps::kChannelAttention);
    expect_matches(m, fx, names);
    const Attended r = m.forward_with_maps(fx.tensor("input"));
    EXPECT_EQ(r.maps.contains(maps::kAttention), o.use_attn());
    EXPECT_EQ(r.maps.contains(maps::kChannelAttention), o.fuse_scale());
  }
}

TEST(GlobalContext, OptionsKeysAndAttentionSumsToOne) {
  const auto o =
      GlobalContextOptions::from_state_dict(test::fixture("gates/gc_c16_both").weights());
  EXPECT_TRUE(o.use_attn() && o.fuse_add() && o.fuse_scale());
  EXPECT_EQ(o.rd_channels(), 2);
  EXPECT_EQ(GlobalContext(GlobalContextOptions(32)).reduced_channels(), 4);
  GlobalContext m(GlobalContextOptions(16).fuse_add(true).fuse_scale(false));
  EXPECT_EQ(
      m.state_dict().keys(),
      (std::vector<std::string>{"conv_attn.weight", "conv_attn.bias", "mlp_add.fc1.weight",
                                "mlp_add.fc1.bias", "mlp_add.norm.weight", "mlp_add.norm.bias",
                                "mlp_add.fc2.weight", "mlp_add.fc2.bias"}));
  test::randomise(m, 4);
  const Tensor a =
      m.forward_with_maps(test::random_tensor({2, 16, 5, 3}, 1)).maps.at(maps::kAttention);
  for (std::int64_t n = 0; n < 2; ++n) {
    double sum = 0;
    for (std::int64_t p = 0; p < 15; ++p) sum += a[n * 15 + p];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

// The attention pool's softmax over the pixels as torch.softmax: a NaN or +inf logit, or every
// logit -inf, makes the sample's whole row NaN; a -inf logit beside finite ones gets weight 0.
// (torch.softmax of [-inf, -inf, -inf], [1, nan, 2] and [1, inf, 2] is all NaN, of
// [1, -inf, 2] is [0.2689, 0, 0.7311].) Four samples of 2 channels x 3 pixels, weight [1, 1].
TEST(GlobalContext, AttentionPoolNonFiniteLogitsAsTorch) {
  const float inf = HUGE_VALF, nan = std::nanf("");
  Tensor x = Tensor::zeros({4, 2, 1, 3});
  const float logits[4][3] = {{-inf, -inf, -inf}, {1, nan, 2}, {1, inf, 2}, {1, -inf, 2}};
  for (int n = 0; n < 4; ++n) {
    for (int p = 0; p < 3; ++p) x[n * 6 + p] = logits[n][p];  // channel 1 stays 0
  }
  Tensor weight = Tensor::zeros({1, 2, 1, 1});
  weight[0] = 1.0f;
  weight[1] = 1.0f;
  const auto [context, attn] = functional::attention_pool(x, weight, Tensor::zeros({1}));
  for (int n = 0; n < 3; ++n) {
    for (int p = 0; p < 3; ++p) EXPECT_TRUE(std::isnan(attn[n * 3 + p])) << n << ", " << p;
  }
  EXPECT_NEAR(attn[9], 0.26894142f, 1e-6);
  EXPECT_EQ(attn[10], 0.0f);
  EXPECT_NEAR(attn[11], 0.73105858f, 1e-6);
}

TEST(GlobalContext, RejectsBadWeights) {
  EXPECT_THAT(test::Call([] { (void)GlobalContextOptions::from_state_dict(StateDict()); }),
              ThrowsMessage<ValueError>(HasSubstr("the weights size nothing")));
  StateDict d = test::fixture("gates/gc_c16_both").weights();
  d.set("mlp_scale.fc1.weight", Tensor::zeros({3, 16, 1, 1}));
  EXPECT_THAT(test::Call([&] { (void)GlobalContextOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "'mlp_scale.fc1.weight' [3, 16, 1, 1] disagrees with 'mlp_add.fc1.weight' "
                  "[2, 16, 1, 1]")));
}

TEST(GlobalContext, ForwardIsThreadSafe) {
  GlobalContext m(GlobalContextOptions(24).fuse_add(true));
  test::randomise(m, 8);
  const Tensor x = test::random_tensor({3, 24, 9, 7}, 5);
  test::expect_thread_safe([&] { return m.forward(x); });
}

// ------------------------------------------------------------------------------- CoordAttn

TEST(CoordAttn, MatchesTimm) {
  const auto cases = test::gate_cases("coord_");
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto o = CoordAttnOptions::from_state_dict(fx.weights())
                       .act_layer(parse_act_layer(test::set_value(fx, "act_layer", "hard_swish")))
                       .gate_layer(parse_gate_layer(test::set_value(fx, "gate_layer", "sigmoid")))
                       .has_skip(test::set_bool(fx, "has_skip", false));
    CoordAttn m(o);
    m.load_state_dict(fx.weights());
    expect_matches(m, fx, {maps::kAttentionH, maps::kAttentionW});
  }
}

TEST(CoordAttn, KeysAndErrors) {
  const CoordAttn m(CoordAttnOptions(16, 8).bias(true).norm(false));
  EXPECT_EQ(m.state_dict().keys(),
            (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv_h.weight", "conv_h.bias",
                                      "conv_w.weight", "conv_w.bias"}));
  EXPECT_EQ(m.describe(),
            "CoordAttn(channels=16, rd_channels=8, bias=true, norm=none, act_layer=hard_swish, "
            "gate_layer=sigmoid, has_skip=false)");
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 3, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("CoordAttn::forward: tensor 'x' expected shape "
                                                  "[*, 16, *, *]")));
  StateDict d;
  d.set("conv1.weight", Tensor::zeros({8, 16, 3, 3}));
  EXPECT_THAT(test::Call([&] { (void)CoordAttnOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("'conv1.weight' expected [*, *, 1, 1]")));
}

TEST(CoordAttn, ForwardIsThreadSafe) {
  CoordAttn m(CoordAttnOptions(24, 8).has_skip(true));
  test::randomise(m, 2);
  const Tensor x = test::random_tensor({3, 24, 9, 7}, 3);
  test::expect_thread_safe([&] { return m.forward(x); });
}

// ------------------------------------------------------------------------------- SplitAttn

TEST(SplitAttn, MatchesTimm) {
  const auto cases = test::gate_cases("splat_");
  ASSERT_EQ(cases.size(), 5u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    SplitAttnOptions o = SplitAttnOptions::from_state_dict(
        fx.weights(), "", test::set_int(fx, "radix", 2), test::set_int(fx, "groups", 1));
    EXPECT_EQ(o.kernel_size(), test::set_int(fx, "kernel_size", 3));
    o.stride(test::set_int(fx, "stride", 1)).dilation(test::set_int(fx, "dilation", 1));
    if (fx.params()["set"].contains("padding")) o.padding(test::set_int(fx, "padding", 0));
    SplitAttn m(o);
    m.load_state_dict(fx.weights());
    expect_matches(m, fx, {maps::kAttention});
  }
}

TEST(SplitAttn, RadixSoftmaxSumsToOneAndWidthsFollowTimm) {
  EXPECT_EQ(SplitAttn(SplitAttnOptions(16, 16)).attn_channels(), 32);  // min 32
  EXPECT_EQ(SplitAttn(SplitAttnOptions(128, 128)).attn_channels(), 64);
  SplitAttn m(SplitAttnOptions(12, 10).radix(3).groups(2).norm(true).stride(2));
  EXPECT_EQ(m.state_dict().keys().front(), "conv.weight");
  test::randomise(m, 6);
  const Attended r = m.forward_with_maps(test::random_tensor({2, 12, 7, 4}, 1));
  EXPECT_EQ(r.output.shape(), (Shape{2, 10, 4, 2}));
  const Tensor& a = r.maps.at(maps::kAttention);
  ASSERT_EQ(a.shape(), (Shape{2, 3, 10}));
  for (std::int64_t n = 0; n < 2; ++n) {
    for (std::int64_t c = 0; c < 10; ++c) {
      EXPECT_NEAR(a[n * 30 + c] + a[n * 30 + 10 + c] + a[n * 30 + 20 + c], 1.0, 1e-6);
    }
  }
}

TEST(SplitAttn, RejectsWeightsThatContradictRadixAndGroups) {
  const StateDict w = test::fixture("gates/splat_c16_r2").weights();
  EXPECT_THAT(test::Call([&] { (void)SplitAttnOptions::from_state_dict(w, "", 4, 1); }),
              ThrowsMessage<ValueError>(HasSubstr("radix 4 and groups 1 contradict the weights: "
                                                  "'conv.weight' [32, 8, 3, 3]")));
  EXPECT_THAT(test::Call([] { (void)SplitAttn(SplitAttnOptions(10, 16).radix(4)); }),
              ThrowsMessage<ValueError>(HasSubstr("groups * radix (4) must divide in_channels "
                                                  "(10)")));
  const SplitAttn m(SplitAttnOptions::from_state_dict(w));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 5, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, 16, *, *]")));
}

TEST(SplitAttn, ForwardIsThreadSafe) {
  SplitAttn m(SplitAttnOptions(16, 16).groups(2).norm(true));
  test::randomise(m, 7);
  const Tensor x = test::random_tensor({3, 16, 9, 7}, 3);
  test::expect_thread_safe([&] { return m.forward(x); });
}

}  // namespace
}  // namespace cvattn
