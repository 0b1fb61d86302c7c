// DeformConv2d (mmcv DeformConv2dPack / ModulatedDeformConv2dPack) against torch
// re-implementations of the mmcv modules (tests/fixtures/deform.py), plus invariants and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/deform_conv.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using test::pair;
using test::ThreadScope;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};
constexpr test::Tolerance kExact{0, 0};

// A module from a fixture, as a user would build it: shapes from the weights, the rest given.
DeformConv2d module_of(const test::Fixture& fx) {
  const auto& p = fx.params();
  const StateDict sd = fx.weights();
  auto options = DeformConv2dOptions::from_state_dict(sd, p["deform_groups"].get<std::int64_t>())
                     .stride(pair(p["stride"]))
                     .padding(pair(p["padding"]))
                     .dilation(pair(p["dilation"]));
  DeformConv2d m(options);
  m.load_state_dict(sd);
  return m;
}

void set_random(const Tensor& t, std::uint64_t seed, float lo = -1, float hi = 1) {
  Tensor(t).copy_from(test::random_tensor(t.shape(), seed, lo, hi));
}

TEST(DeformConv2dModule, MatchesMmcv) {
  const auto cases = test::fixtures_in("deform/module");
  ASSERT_GE(cases.size(), 9u);
  for (int threads : {1, 2}) {
    ThreadScope scope(threads);
    for (const auto& fx : cases) {
      SCOPED_TRACE(fx.name() + " threads=" + std::to_string(threads));
      const DeformConv2d m = module_of(fx);
      const auto& p = fx.params();
      EXPECT_EQ(m.options().in_channels(), p["in_channels"].get<std::int64_t>());
      EXPECT_EQ(m.options().out_channels(), p["out_channels"].get<std::int64_t>());
      EXPECT_EQ(m.options().kernel_size(), pair(p["kernel_size"]));
      EXPECT_EQ(m.options().groups(), p["groups"].get<std::int64_t>());
      EXPECT_EQ(m.options().modulated(), p["modulated"].get<bool>());
      EXPECT_EQ(m.options().bias(), p["bias"].get<bool>());
      const Attended r = m.forward_with_maps(fx.tensor("input"));
      EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), kTol);
      EXPECT_TENSOR_NEAR(r.maps.at(maps::kOffset), fx.tensor("offset"), kTol);
      if (m.options().modulated()) {
        EXPECT_TENSOR_NEAR(r.maps.at(maps::kMask), fx.tensor("mask"), kTol);
      } else {
        EXPECT_FALSE(r.maps.contains(maps::kMask));
      }
      EXPECT_TENSOR_NEAR(m.forward(fx.tensor("input")), r.output, kExact);
    }
  }
}

TEST(DeformConv2dModule, StateDictKeysAreMmcvs) {
  const DeformConv2d v1(DeformConv2dOptions(4, 6, 3));
  EXPECT_EQ(v1.state_dict().keys(),
            (std::vector<std::string>{"weight", "conv_offset.weight", "conv_offset.bias"}));
  EXPECT_EQ(v1.conv_offset().weight().shape(), (Shape{18, 4, 3, 3}));
  const DeformConv2d v2(DeformConv2dOptions(64, 64, 3).modulated(true).bias(true));
  EXPECT_EQ(v2.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "conv_offset.weight", "conv_offset.bias"}));
  EXPECT_EQ(v2.conv_offset().weight().shape(), (Shape{27, 64, 3, 3}));
  const DeformConv2d v2g(
      DeformConv2dOptions(8, 4, {1, 3}).modulated(true).deform_groups(2).groups(2));
  EXPECT_EQ(v2g.conv_offset().weight().shape(), (Shape{18, 8, 1, 3}));
  EXPECT_EQ(v2g.weight().shape(), (Shape{4, 4, 1, 3}));
}

// mmcv zero-initialises conv_offset: DCNv1 is then a plain conv.
TEST(DeformConv2dModule, UntrainedDcnV1IsPlainConv) {
  const auto options =
      DeformConv2dOptions(6, 4, {3, 2}).stride({2, 1}).padding(1).dilation({1, 2}).groups(2);
  DeformConv2d m(options);
  set_random(m.weight(), 1);
  const Tensor x = test::random_tensor({2, 6, 9, 7}, 2);
  const Attended r = m.forward_with_maps(x);
  const Tensor ref = F::conv2d(
      x, m.weight(), {}, F::Conv2dOptions().stride({2, 1}).padding(1).dilation({1, 2}).groups(2));
  EXPECT_TENSOR_NEAR(r.output, ref, kTol);
  const Tensor& offset = r.maps.at(maps::kOffset);
  EXPECT_EQ(offset.shape(), (Shape{2, 12, ref.dim(2), ref.dim(3)}));
  for (std::int64_t i = 0; i < offset.numel(); ++i) ASSERT_EQ(offset[i], 0.0f);
}

// ... and DCNv2 is 0.5 * conv + bias (offsets 0, mask sigmoid(0) = 0.5).
TEST(DeformConv2dModule, UntrainedDcnV2IsHalfConvPlusBias) {
  DeformConv2d m(
      DeformConv2dOptions(5, 3, 3).padding(1).modulated(true).bias(true).deform_groups(5));
  set_random(m.weight(), 3);
  set_random(m.bias(), 4);
  const Tensor x = test::random_tensor({1, 5, 7, 5}, 5);
  const Attended r = m.forward_with_maps(x);
  Tensor ref = F::conv2d(x, m.weight(), {}, F::Conv2dOptions().padding(1));
  for (std::int64_t i = 0; i < ref.numel(); ++i) ref[i] = 0.5f * ref[i] + m.bias()[i / 35];
  EXPECT_TENSOR_NEAR(r.output, ref, kTol);
  const Tensor& mask = r.maps.at(maps::kMask);
  EXPECT_EQ(mask.shape(), (Shape{1, 45, 7, 5}));
  for (std::int64_t i = 0; i < mask.numel(); ++i) ASSERT_EQ(mask[i], 0.5f);
  EXPECT_EQ(r.maps.at(maps::kOffset).shape(), (Shape{1, 90, 7, 5}));
}

TEST(DeformConv2dModule, FromStateDictInfersTheVariant) {
  StateDict sd;
  sd.set("weight", Tensor::zeros({8, 2, 3, 3}));
  sd.set("conv_offset.weight", Tensor::zeros({36, 4, 3, 3}));
  sd.set("conv_offset.bias", Tensor::zeros({36}));
  auto o = DeformConv2dOptions::from_state_dict(sd, 2);  // 36 = 2 * 2 * 9: DCNv1, dg 2
  EXPECT_EQ(o.in_channels(), 4);
  EXPECT_EQ(o.out_channels(), 8);
  EXPECT_EQ(o.groups(), 2);
  EXPECT_EQ(o.deform_groups(), 2);
  EXPECT_FALSE(o.modulated());
  EXPECT_FALSE(o.bias());
  sd.set("conv_offset.weight", Tensor::zeros({54, 4, 3, 3}));  // 54 = 3 * 2 * 9: DCNv2, dg 2
  sd.set("conv_offset.bias", Tensor::zeros({54}));
  sd.set("bias", Tensor::zeros({8}));
  o = DeformConv2dOptions::from_state_dict(sd, 2);
  EXPECT_TRUE(o.modulated());
  EXPECT_TRUE(o.bias());
  DeformConv2d m(o);
  m.load_state_dict(sd);
}

TEST(DeformConv2dModule, RejectsOffsetChannelsOfNeitherVariant) {
  StateDict sd;
  sd.set("weight", Tensor::zeros({8, 4, 3, 3}));
  sd.set("conv_offset.weight", Tensor::zeros({20, 4, 3, 3}));
  sd.set("conv_offset.bias", Tensor::zeros({20}));
  EXPECT_THAT(test::Call([&] { (void)DeformConv2dOptions::from_state_dict(sd); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "'conv_offset.weight' [20, 4, 3, 3] has 20 output channels; expected "
                  "2*deform_groups*kh*kw = 18 (DCNv1) or 3*deform_groups*kh*kw = 27 (DCNv2, "
                  "modulated) for deform_groups=1 and kernel (3, 3)")));
  // 27 channels with deform_groups=2 is neither (36, 54).
  sd.set("conv_offset.weight", Tensor::zeros({27, 4, 3, 3}));
  EXPECT_THAT(test::Call([&] { (void)DeformConv2dOptions::from_state_dict(sd, 2); }),
              ThrowsMessage<ValueError>(HasSubstr("'conv_offset.weight' [27, 4, 3, 3] has 27")));
  EXPECT_TRUE(DeformConv2dOptions::from_state_dict(sd, 1).modulated());
  sd.set("conv_offset.weight", Tensor::zeros({27, 4, 1, 3}));
  EXPECT_THAT(test::Call([&] { (void)DeformConv2dOptions::from_state_dict(sd); }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "'conv_offset.weight' expected the kernel (3, 3) of 'weight' [8, 4, 3, 3], got "
                  "[27, 4, 1, 3]")));
  sd.set("conv_offset.weight", Tensor::zeros({27, 6, 3, 3}));
  EXPECT_THAT(test::Call([&] { (void)DeformConv2dOptions::from_state_dict(sd); }),
              ThrowsMessage<ShapeError>(HasSubstr("expects a multiple of 4 input channels")));
  StateDict missing;
  missing.set("weight", Tensor::zeros({8, 4, 3, 3}));
  EXPECT_THAT(test::Call([&] { (void)DeformConv2dOptions::from_state_dict(missing); }),
              ThrowsMessage<ValueError>(HasSubstr("conv_offset.weight")));
  EXPECT_THAT(test::Call([&] { (void)DeformConv2dOptions::from_state_dict(sd, 0); }),
              ThrowsMessage<ValueError>(HasSubstr("deform_groups must be positive")));
}

TEST(DeformConv2dModule, FromStateDictUnderAPrefix) {
  StateDict sd;
  sd.set("layer1.0.conv2.weight", Tensor::zeros({4, 4, 3, 3}));
  sd.set("layer1.0.conv2.bias", Tensor::zeros({4}));
  sd.set("layer1.0.conv2.conv_offset.weight", Tensor::zeros({27, 4, 3, 3}));
  sd.set("layer1.0.conv2.conv_offset.bias", Tensor::zeros({27}));
  const auto o = DeformConv2dOptions::from_state_dict(sd, 1, "layer1.0.conv2");
  EXPECT_TRUE(o.modulated());
  EXPECT_TRUE(o.bias());
  DeformConv2d m(o);
  m.load_state_dict(sd.sub("layer1.0.conv2"));
}

TEST(DeformConv2dModule, LoadingChecksKeysAndShapes) {
  DeformConv2d m(DeformConv2dOptions(4, 4, 3).modulated(true).bias(true));
  StateDict sd;
  sd.set("weight", Tensor::zeros({4, 4, 3, 3}));
  sd.set("conv_offset.weight", Tensor::zeros({27, 4, 3, 3}));
  sd.set("conv_offset.bias", Tensor::zeros({27}));
  EXPECT_THAT(test::Call([&] { m.load_state_dict(sd); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'bias'")));
  sd.set("bias", Tensor::zeros({4}));
  sd.set("conv_offset.weight", Tensor::zeros({18, 4, 3, 3}));
  EXPECT_THAT(test::Call([&] { m.load_state_dict(sd); }),
              ThrowsMessage<ValueError>(HasSubstr("'conv_offset.weight' expected [27, 4, 3, 3]")));
}

TEST(DeformConv2dModule, RejectsBadOptionsAndInputs) {
  EXPECT_THAT(test::Call([] { DeformConv2d m(DeformConv2dOptions(4, 4, 3).bias(true)); }),
              ThrowsMessage<ValueError>(HasSubstr("DCNv1) has no bias")));
  EXPECT_THAT(test::Call([] { DeformConv2d m(DeformConv2dOptions(4, 4, 3).groups(3)); }),
              ThrowsMessage<ValueError>(HasSubstr("groups (3) must divide in_channels (4)")));
  EXPECT_THAT(
      test::Call([] { DeformConv2d m(DeformConv2dOptions(4, 4, 3).deform_groups(3)); }),
      ThrowsMessage<ValueError>(HasSubstr("deform_groups (3) must divide in_channels (4)")));
  EXPECT_THAT(test::Call([] { DeformConv2d m(DeformConv2dOptions(4, 4, 0)); }),
              ThrowsMessage<ValueError>(HasSubstr("kernel_size must be positive")));
  EXPECT_THAT(test::Call([] { DeformConv2d m(DeformConv2dOptions(4, 4, 3).stride(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("stride must be positive")));
  const DeformConv2d m(DeformConv2dOptions(4, 4, 3));
  EXPECT_THAT(
      test::Call([&] {
        (void)m.forward(Tensor::zeros({1, 3, 8, 8}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr(
          "DeformConv2d::forward: tensor 'x' expected shape [*, 4, *, *], got [1, 3, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({4, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'x' expected shape [*, 4, *, *]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 4, 2, 2}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("larger than the padded input")));
}

TEST(DeformConv2dModule, Describe) {
  EXPECT_EQ(DeformConv2d(DeformConv2dOptions(4, 6, 3).padding(1)).describe(),
            "DeformConv2dPack(in_channels=4, out_channels=6, kernel_size=(3, 3), stride=(1, 1), "
            "padding=(1, 1), dilation=(1, 1), groups=1, deform_groups=1, bias=False)");
  EXPECT_EQ(DeformConv2d(DeformConv2dOptions(4, 6, {1, 3}).modulated(true).bias(true).groups(2))
                .describe(),
            "ModulatedDeformConv2dPack(in_channels=4, out_channels=6, kernel_size=(1, 3), "
            "stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=2, deform_groups=1, "
            "bias=True)");
}

TEST(DeformConv2dModule, ForwardIsThreadSafe) {
  const auto fx = test::fixture("deform/module/dcn_v2_dg2_groups2");
  const DeformConv2d m = module_of(fx);
  const Tensor x = fx.tensor("input");
  const Tensor ref = m.forward(x);
  std::vector<Tensor> results(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = m.forward_with_maps(x).output; });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_TENSOR_NEAR(r, ref, kExact);
}

}  // namespace
}  // namespace cvattn
