// LayerNorm, LayerNorm2d, GroupNorm, the activation modules, Identity, Dropout and DropPath:
// keys, describe() against PyTorch's repr, parity with nn.* / timm modules and in Sequential.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/activation_layers.hpp"
#include "cvattn/modules/dropout.hpp"
#include "cvattn/modules/normalization.hpp"
#include "cvattn/modules/sequential.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};
constexpr test::Tolerance kExact{0, 0};

TEST(LayerNormModule, MatchesPyTorch) {
  for (const char* name : {"layers/lnmod", "layers/lnmod_2d"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(name);
    const StateDict dict = fx.weights();
    LayerNorm ln(LayerNormOptions::from_state_dict(dict));
    EXPECT_EQ(ln.options().normalized_shape(), fx.params()["normalized_shape"].get<Shape>());
    ln.load_state_dict(dict);
    EXPECT_TENSOR_NEAR(ln.forward(fx.tensor("input")), fx.tensor("output"), kTol);
  }
  const auto fx = test::fixture("layers/lnmod_noaffine");
  const LayerNorm ln(LayerNormOptions({10}).elementwise_affine(false));
  EXPECT_TRUE(ln.state_dict().empty());
  EXPECT_TENSOR_NEAR(ln.forward(fx.tensor("input")), fx.tensor("output"), kTol);
}

TEST(LayerNormModule, KeysFreshStateAndDescribe) {
  const LayerNorm ln(LayerNormOptions({4, 5}));
  EXPECT_THAT(ln.state_dict().keys(), ElementsAre("weight", "bias"));
  EXPECT_EQ(ln.weight()[0], 1.0f);
  EXPECT_EQ(ln.bias()[0], 0.0f);
  EXPECT_EQ(ln.describe(), "LayerNorm((4, 5), eps=1e-05, elementwise_affine=True)");
  EXPECT_EQ(LayerNorm(LayerNormOptions({384}).eps(1e-6)).describe(),
            "LayerNorm((384,), eps=1e-06, elementwise_affine=True)");
}

TEST(LayerNormModule, RejectsBadOptionsAndInputs) {
  EXPECT_THAT(test::Call([] { LayerNorm(LayerNormOptions({})); }),
              ThrowsMessage<ValueError>(HasSubstr("LayerNormOptions: normalized_shape")));
  EXPECT_THAT(test::Call([] { LayerNorm(LayerNormOptions({0})); }),
              ThrowsMessage<ValueError>(HasSubstr("must be positive")));
  EXPECT_THAT(test::Call([] { LayerNorm(LayerNormOptions({3}).eps(-1)); }),
              ThrowsMessage<ValueError>(HasSubstr("eps")));
  EXPECT_THAT(test::Call([] { (void)LayerNormOptions::from_state_dict(StateDict()); }),
              ThrowsMessage<ValueError>(HasSubstr("no 'weight'")));
  const LayerNorm ln(LayerNormOptions({8}));
  EXPECT_THAT(test::Call([&] {
                (void)ln.forward(Tensor::zeros({2, 7}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, 8]")));
}

TEST(LayerNorm2dModule, MatchesTimm) {
  for (const char* name : {"layers/ln2d", "layers/ln2d_eps5"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(name);
    const StateDict dict = fx.weights();
    LayerNorm2d ln(LayerNorm2dOptions::from_state_dict(dict).eps(fx.params()["eps"].get<double>()));
    ln.load_state_dict(dict);
    EXPECT_TENSOR_NEAR(ln.forward(fx.tensor("input")), fx.tensor("output"), kTol);
  }
  const auto fx = test::fixture("layers/ln2d_noaffine");
  const LayerNorm2d ln(LayerNorm2dOptions(6).affine(false));
  EXPECT_TRUE(ln.state_dict().empty());
  EXPECT_TENSOR_NEAR(ln.forward(fx.tensor("input")), fx.tensor("output"), kTol);
}

TEST(LayerNorm2dModule, DescribesAsTimmAndChecksChannels) {
  const LayerNorm2d ln(LayerNorm2dOptions(64));
  EXPECT_EQ(ln.describe(), "LayerNorm2d((64,), eps=1e-06, elementwise_affine=True)");
  EXPECT_THAT(ln.state_dict().keys(), ElementsAre("weight", "bias"));
  EXPECT_THAT(test::Call([&] {
                (void)ln.forward(Tensor::zeros({1, 32, 4, 4}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("LayerNorm2d::forward: tensor 'x' expected shape [*, 64, *, *], got "
                            "[1, 32, 4, 4]")));
}

TEST(GroupNormModule, MatchesPyTorch) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("layers", "gn_")) {
    SCOPED_TRACE(fx.name());
    const auto groups = fx.params()["num_groups"].get<std::int64_t>();
    const double eps = fx.params()["eps"].get<double>();
    const StateDict dict = fx.weights();
    GroupNormOptions options = fx.params()["affine"].get<bool>()
                                   ? GroupNormOptions::from_state_dict(dict, groups)
                                   : GroupNormOptions(groups, fx.tensor("input").dim(1));
    GroupNorm gn(options.eps(eps).affine(fx.params()["affine"].get<bool>()));
    gn.load_state_dict(dict);
    EXPECT_TENSOR_NEAR(gn.forward(fx.tensor("input")), fx.tensor("output"), kTol);
    ++cases;
  }
  EXPECT_EQ(cases, 8);
}

TEST(GroupNormModule, DescribeAndErrors) {
  const GroupNorm gn(GroupNormOptions(32, 64));
  EXPECT_EQ(gn.describe(), "GroupNorm(32, 64, eps=1e-05, affine=True)");
  EXPECT_THAT(test::Call([] { GroupNorm(GroupNormOptions(3, 8)); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "GroupNormOptions: num_groups (3) must be positive and divide num_channels "
                  "(8)")));
  EXPECT_THAT(test::Call([&] {
                (void)gn.forward(Tensor::zeros({2, 32, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "GroupNorm::forward: tensor 'x' expected shape [*, 64, ...], got [2, 32, 3]")));
}

std::string repr_of(const Sequential& seq) {
  std::string out = "Sequential(\n";
  for (std::size_t i = 0; i < seq.size(); ++i) {
    out += "  (" + std::to_string(i) + "): " + seq.at(i)->describe() + "\n";
  }
  return out + ")";
}

TEST(LayerModules, SequentialMatchesPyTorchAndItsRepr) {
  {
    const auto fx = test::fixture("layers/seq_mix");
    Sequential seq{std::make_shared<GroupNorm>(GroupNormOptions(3, 6)),
                   std::make_shared<SiLU>(),
                   std::make_shared<LayerNorm2d>(LayerNorm2dOptions(6)),
                   std::make_shared<Hardswish>(),
                   std::make_shared<Identity>(),
                   std::make_shared<Mish>(),
                   std::make_shared<Dropout>(0.3),
                   std::make_shared<DropPath>(0.2),
                   std::make_shared<GELU>(GeluApproximate::tanh),
                   std::make_shared<Hardsigmoid>(),
                   std::make_shared<GELU>()};
    seq.load_state_dict(fx.weights());
    EXPECT_TENSOR_NEAR(seq.forward(fx.tensor("input")), fx.tensor("output"), kTol);
    EXPECT_EQ(repr_of(seq), fx.params()["repr"].get<std::string>());
  }
  {
    const auto fx = test::fixture("layers/seq_ln");
    Sequential seq{std::make_shared<LayerNorm>(LayerNormOptions({4, 5})),
                   std::make_shared<Activation>("gelu"), std::make_shared<Dropout>(0.5),
                   std::make_shared<LayerNorm>(LayerNormOptions({5}))};
    seq.load_state_dict(fx.weights());
    EXPECT_TENSOR_NEAR(seq.forward(fx.tensor("input")), fx.tensor("output"), kTol);
    EXPECT_EQ(repr_of(seq), fx.params()["repr"].get<std::string>());
  }
}

TEST(LayerModules, ActivationByNameMatchesTheNamedModule) {
  const Tensor x = test::random_tensor({2, 3, 7, 5}, 8, -5.0f, 5.0f);
  EXPECT_TENSOR_NEAR(Activation("swish").forward(x), SiLU().forward(x), kExact);
  EXPECT_TENSOR_NEAR(Activation("hard_swish").forward(x), Hardswish().forward(x), kExact);
  EXPECT_TENSOR_NEAR(Activation("hard_sigmoid").forward(x), Hardsigmoid().forward(x), kExact);
  EXPECT_TENSOR_NEAR(Activation("gelu_tanh").forward(x), GELU(GeluApproximate::tanh).forward(x),
                     kExact);
  EXPECT_TENSOR_NEAR(Activation("relu6").forward(x), ReLU6().forward(x), kExact);
  EXPECT_EQ(Activation("swish").describe(), "SiLU()");
  EXPECT_EQ(Activation(ActLayer::gelu_tanh).describe(), "GELU(approximate='tanh')");
  EXPECT_THAT(test::Call([] { Activation("prelu"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown act_layer 'prelu'")));
}

TEST(LayerModules, IdentityDropoutDropPathReturnTheInput) {
  const Tensor x = test::random_tensor({2, 3}, 4);
  EXPECT_EQ(Identity().forward(x).data(), x.data());
  EXPECT_EQ(Dropout(0.9).forward(x).data(), x.data());
  EXPECT_EQ(DropPath(0.25).forward(x).data(), x.data());
  EXPECT_EQ(Dropout(0.1).describe(), "Dropout(p=0.1, inplace=False)");
  EXPECT_EQ(DropPath(0.1).describe(), "DropPath(drop_prob=0.100)");
  EXPECT_THAT(test::Call([] { Dropout(1.5); }), ThrowsMessage<ValueError>(HasSubstr("Dropout: p")));
  EXPECT_THAT(test::Call([] { DropPath(-0.1); }),
              ThrowsMessage<ValueError>(HasSubstr("DropPath: drop_prob")));
  EXPECT_THAT(test::Call([] { (void)Dropout().forward(Tensor()); }),
              ThrowsMessage<ShapeError>(HasSubstr("Dropout::forward")));
}

TEST(LayerModules, ForwardIsThreadSafe) {
  const auto fx = test::fixture("layers/seq_mix");
  Sequential seq{std::make_shared<GroupNorm>(GroupNormOptions(3, 6)), std::make_shared<SiLU>(),
                 std::make_shared<LayerNorm2d>(LayerNorm2dOptions(6))};
  const StateDict all = fx.weights();
  StateDict dict;
  for (const auto& e : all.entries()) {
    if (e.key[0] == '0' || e.key[0] == '2') dict.set(e.key, e.value);
  }
  seq.load_state_dict(dict);
  const Tensor x = fx.tensor("input");
  const Tensor ref = seq.forward(x);
  std::vector<Tensor> out(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back([&, t] { out[t] = seq.forward(x); });
  for (auto& th : threads) th.join();
  for (const auto& o : out) EXPECT_TENSOR_NEAR(o, ref, kExact);
}

}  // namespace
}  // namespace cvattn
