#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "modules/state_dict_fixture.hpp"
#include "support/call.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using test::pair;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};

TEST(Conv2dModule, MatchesPyTorch) {
  for (const char* name : {"basic_modules/conv2d", "basic_modules/conv2d_1x1_no_bias"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(name);
    const auto& p = fx.params();
    Conv2d conv(Conv2dOptions(p["in_channels"].get<std::int64_t>(),
                              p["out_channels"].get<std::int64_t>(), pair(p["kernel_size"]))
                    .stride(pair(p["stride"]))
                    .padding(pair(p["padding"]))
                    .dilation(pair(p["dilation"]))
                    .groups(p["groups"].get<std::int64_t>())
                    .bias(p["bias"].get<bool>()));
    conv.load_state_dict(test::load_weights(fx));
    EXPECT_TENSOR_NEAR(conv.forward(fx.tensor("input")), fx.tensor("output"), kTol);
    EXPECT_EQ(conv.describe(), p["repr"].get<std::string>());
  }
}

TEST(Conv2dModule, OptionsFromStateDict) {
  const auto fx = test::fixture("basic_modules/conv2d");
  const StateDict dict = test::state_dict_from_npy(fx);
  const auto o = Conv2dOptions::from_state_dict(dict, "", 2);
  EXPECT_EQ(o.in_channels(), 4);
  EXPECT_EQ(o.out_channels(), 6);
  EXPECT_EQ(o.kernel_size(), Pair2(3, 5));
  EXPECT_EQ(o.groups(), 2);
  EXPECT_TRUE(o.bias());
  // A prefix with or without the dot; no bias key -> bias(false).
  StateDict nested;
  nested.set("features.0.weight", Tensor::zeros({8, 3, 7, 7}));
  EXPECT_FALSE(Conv2dOptions::from_state_dict(nested, "features.0").bias());
  EXPECT_EQ(Conv2dOptions::from_state_dict(nested, "features.0.").kernel_size(), Pair2(7));
  EXPECT_THAT(test::Call([&] { (void)Conv2dOptions::from_state_dict(nested, "features.1"); }),
              ThrowsMessage<ValueError>(HasSubstr("missing key 'features.1.weight'")));
}

TEST(Conv2dModule, NoBiasMeansNoBiasKey) {
  Conv2d conv(Conv2dOptions(2, 3, 3).bias(false));
  EXPECT_EQ(conv.state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_FALSE(conv.bias().defined());
  StateDict dict;
  dict.set("weight", Tensor::zeros({3, 2, 3, 3}));
  dict.set("bias", Tensor::zeros({3}));
  EXPECT_THAT(test::Call([&] { conv.load_state_dict(dict); }),
              ThrowsMessage<ValueError>(HasSubstr("unexpected 'bias'")));
  conv.load_state_dict(dict, Strict::no);  // non-strict ignores it
}

TEST(Conv2dModule, DescribeLikePyTorch) {
  EXPECT_EQ(Conv2d(Conv2dOptions(3, 8, 3)).describe(),
            "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))");
  EXPECT_EQ(
      Conv2d(
          Conv2dOptions(4, 8, {3, 1}).stride(2).padding({1, 0}).dilation(2).groups(4).bias(false))
          .describe(),
      "Conv2d(4, 8, kernel_size=(3, 1), stride=(2, 2), padding=(1, 0), dilation=(2, 2), "
      "groups=4, bias=False)");
}

TEST(Conv2dModule, RejectsBadOptionsAndInputs) {
  EXPECT_THAT(test::Call([] { Conv2d(Conv2dOptions(6, 4, 3).groups(4)); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "Conv2dOptions: groups (4) must divide in_channels (6) and out_channels (4)")));
  EXPECT_THAT(test::Call([] { Conv2d(Conv2dOptions(0, 4, 3)); }),
              ThrowsMessage<ValueError>(HasSubstr("must be positive")));
  EXPECT_THAT(test::Call([] {
                Conv2d(Conv2dOptions(2, 4, {3, 0}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("kernel_size must be positive, got (3, 0)")));
  EXPECT_THAT(test::Call([] { Conv2d(Conv2dOptions(2, 4, 3).padding(-1)); }),
              ThrowsMessage<ValueError>(HasSubstr("padding must be non-negative")));
  const Conv2d conv(Conv2dOptions(64, 8, 3));
  EXPECT_THAT(test::Call([&] {
                (void)conv.forward(Tensor::zeros({1, 32, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "Conv2d::forward: tensor 'x' expected shape [*, 64, *, *], got [1, 32, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)conv.forward(Tensor::zeros({1, 64, 2, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("larger than the padded input (2, 8)")));
  EXPECT_EQ(conv.forward(Tensor::zeros({64, 5, 6})).shape(), (Shape{8, 3, 4}));
}

// The module prepares its weight at load (functional::Conv2dWeight): every path conv2d takes
// (Winograd F(4x4) with packed transforms, F(2x2) past the error bound, dilated sub-images,
// im2col, 1x1 products, depthwise, unbatched input) gives the functional call's values exactly,
// and loading again replaces what was prepared.
TEST(Conv2dModule, PreparedAtLoadGivesTheFunctionalCallsValues) {
  struct Case {
    Conv2dOptions options;
    Shape input;
  };
  const Case cases[] = {
      {Conv2dOptions(64, 64, 3).padding(1), {1, 64, 20, 24}},
      {Conv2dOptions(8, 12, 3).padding(1), {2, 8, 9, 11}},
      {Conv2dOptions(16, 16, 3).padding(2).dilation(2), {1, 16, 14, 16}},
      {Conv2dOptions(6, 8, {3, 5}).stride(2).padding({1, 2}).groups(2), {2, 6, 11, 13}},
      {Conv2dOptions(96, 24, 1).bias(false), {1, 96, 7, 9}},
      {Conv2dOptions(12, 12, 5).padding(2).groups(12), {1, 12, 10, 10}},
      {Conv2dOptions(16, 16, 3).padding(1), {16, 12, 12}},
  };
  int seed = 10;
  for (const Case& c : cases) {
    SCOPED_TRACE(Conv2d(c.options).describe());
    const auto& o = c.options;
    const auto fopts = functional::Conv2dOptions()
                           .stride(o.stride())
                           .padding(o.padding())
                           .dilation(o.dilation())
                           .groups(o.groups());
    const Shape wshape{o.out_channels(), o.in_channels() / o.groups(), o.kernel_size().h,
                       o.kernel_size().w};
    const Tensor x = test::random_tensor(c.input, ++seed);
    Conv2d conv(o);
    for (int load = 0; load < 2; ++load) {
      StateDict dict;
      dict.set("weight", test::random_tensor(wshape, ++seed, -0.2f, 0.2f));
      if (o.bias()) dict.set("bias", test::random_tensor({o.out_channels()}, ++seed));
      conv.load_state_dict(dict);
      const Tensor want =
          functional::conv2d(x, dict.at("weight"), o.bias() ? dict.at("bias") : Tensor(), fopts);
      EXPECT_TENSOR_NEAR(conv.forward(x), want, (test::Tolerance{0, 0})) << "load " << load;
      // Inputs past F(4x4)'s error bound take F(2x2): still the functional call's values.
      const Tensor big = test::random_tensor(c.input, ++seed, -3e4f, 3e4f);
      EXPECT_TENSOR_NEAR(
          conv.forward(big),
          functional::conv2d(big, dict.at("weight"), o.bias() ? dict.at("bias") : Tensor(), fopts),
          (test::Tolerance{0, 0}))
          << "load " << load;
    }
  }
}

TEST(Conv2dModule, BeforeAnyLoadTheWeightIsReadAsItIs) {
  Conv2d conv(Conv2dOptions(4, 4, 3).padding(1).bias(false));
  const Tensor x = test::random_tensor({1, 4, 6, 6}, 3);
  const Tensor w = test::random_tensor({4, 4, 3, 3}, 4);
  Tensor held = conv.weight();  // a handle on the module's storage
  std::copy(w.data(), w.data() + w.numel(), held.data());
  EXPECT_TENSOR_NEAR(conv.forward(x),
                     functional::conv2d(x, w, {}, functional::Conv2dOptions().padding(1)),
                     (test::Tolerance{0, 0}));
}

}  // namespace
}  // namespace cvattn
