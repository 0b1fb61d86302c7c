// Dynamic convolution (docs/modules.md §17, fixtures from its equations in torch) and timm's
// CondConv2d with CondConvResidual's routing (fixtures from timm's own classes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/dynamic_conv.hpp"
#include "cvattn/modules/cond_conv.hpp"
#include "cvattn/modules/dynamic_conv.hpp"
#include "modules/gates_support.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = cvattn::functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(DynamicConv2d, MatchesTheReference) {
  const auto cases = test::gate_cases("dyn_");
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    auto o = DynamicConv2dOptions::from_state_dict(fx.weights());
    EXPECT_EQ(o.groups(), test::set_int(fx, "groups", 1));
    o.stride(test::set_pair(fx, "stride", 1))
        .padding(test::set_pair(fx, "padding", 0))
        .dilation(test::set_pair(fx, "dilation", 1))
        .temperature(std::stod(test::set_value(fx, "temperature", "1")));
    DynamicConv2d m(o);
    m.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = m.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(m.forward(x), r.output, (test::Tolerance{0, 0}));
  }
}

TEST(AggregateExperts, ManySamplesAndColumnsAreTheWeightedSum) {
  // P past several column blocks and not a multiple of a vector; each output against the sum in
  // double, on one and two threads (the same bits: the blocks do not change the order of terms).
  const std::int64_t n = 3, k = 4, p = 9001;
  const Tensor routing = test::random_tensor({n, k}, 4);
  const Tensor experts = test::random_tensor({k, 1, p}, 5);
  test::expect_same_on_one_and_two_threads([&] { return F::aggregate_experts(routing, experts); });
  const Tensor one = F::aggregate_experts(routing, experts);
  ASSERT_EQ(one.shape(), (Shape{n, 1, p}));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t c = 0; c < p; ++c) {
      double want = 0.0;
      for (std::int64_t j = 0; j < k; ++j) {
        want += static_cast<double>(routing.data()[i * k + j]) * experts.data()[j * p + c];
      }
      ASSERT_NEAR(one.data()[i * p + c], want, 1e-5 * (1.0 + std::abs(want))) << i << ", " << c;
    }
  }
}

TEST(AggregateExperts, NoExpertsAreZeros) {
  const Tensor y = F::aggregate_experts(Tensor::zeros({2, 0}), Tensor::zeros({0, 3, 5}));
  ASSERT_EQ(y.shape(), (Shape{2, 3, 5}));
  for (std::int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data()[i], 0.0f);
}

TEST(DynamicConv2d, OneHotAttentionIsThatKernelsConv) {
  // routing e_1 picks expert 1 alone: dynamic_conv2d equals conv2d with weight[1], bias[1].
  const Tensor x = test::random_tensor({2, 6, 7, 5}, 1);
  const Tensor w = test::random_tensor({3, 4, 3, 3, 3}, 2);
  const Tensor b = test::random_tensor({3, 4}, 3);
  const Tensor routing = Tensor::from_vector({2, 3}, {0, 1, 0, 0, 1, 0});
  const auto opts = F::Conv2dOptions().padding(1).groups(2);
  const Tensor y = F::dynamic_conv2d(x, w, b, routing, opts);
  EXPECT_TENSOR_NEAR(y, F::conv2d(x, w.select0(1), b.select0(1), opts),
                     (test::Tolerance{1e-6, 1e-6}));
  EXPECT_EQ(
      F::dynamic_conv2d(Tensor::zeros({0, 6, 7, 5}), w, b, Tensor::zeros({0, 3}), opts).shape(),
      (Shape{0, 4, 7, 5}));
}

TEST(DynamicConv2d, KeysAndErrors) {
  const DynamicConv2d m(DynamicConv2dOptions(8, 6, 3).hidden(2).bias(false));
  EXPECT_EQ(m.state_dict().keys(),
            (std::vector<std::string>{"attention.fc1.weight", "attention.fc2.weight",
                                      "attention.fc2.bias", "weight"}));
  EXPECT_EQ(m.describe(),
            "DynamicConv2d(8, 6, kernel_size=(3, 3), num_kernels=4, hidden=2, stride=(1, 1), "
            "padding=(0, 0), dilation=(1, 1), groups=1, bias=false, temperature=1)");
  EXPECT_THAT(test::Call([] { (void)DynamicConv2d(DynamicConv2dOptions(8, 6, 3).temperature(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("temperature must be positive")));
  EXPECT_THAT(test::Call([] { (void)DynamicConv2d(DynamicConv2dOptions(8, 6, 3).groups(4)); }),
              ThrowsMessage<ValueError>(HasSubstr("groups (4) must divide")));
  StateDict d = test::fixture("gates/dyn_c8_co6_k3_bias").weights();
  d.set("attention.fc2.weight", Tensor::zeros({3, 8, 1, 1}));
  EXPECT_THAT(test::Call([&] { (void)DynamicConv2dOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("'attention.fc2.weight' expected [4, 8, 1, 1], "
                                                  "got [3, 8, 1, 1]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 6, 5, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("DynamicConv2d::forward: tensor 'x' expected "
                                                  "shape [*, 8, *, *]")));
}

TEST(DynamicConv2d, ForwardIsThreadSafe) {
  DynamicConv2d m(DynamicConv2dOptions(8, 8, 3).padding(1));
  test::randomise(m, 4);
  const Tensor x = test::random_tensor({3, 8, 9, 7}, 5);
  test::expect_thread_safe([&] { return m.forward(x); });
}

TEST(CondConv2d, MatchesTimm) {
  const auto cases = test::gate_cases("cond_c");
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const Tensor x = fx.tensor("input");
    auto o = CondConv2dOptions::from_state_dict(fx.weights(), x.dim(1),
                                                test::set_pair(fx, "kernel_size", 3),
                                                test::set_int(fx, "groups", 1));
    o.stride(test::set_pair(fx, "stride", 1)).dilation(test::set_pair(fx, "dilation", 1));
    if (fx.params()["set"].contains("padding")) o.padding(test::set_pair(fx, "padding", 0));
    CondConv2d m(o);
    m.load_state_dict(fx.weights());
    EXPECT_TENSOR_NEAR(m.forward(x, fx.tensor("routing_weights")), fx.tensor("output"),
                       test::Tolerance{});
  }
}

TEST(CondConv2d, TimmPaddingAndErrors) {
  EXPECT_EQ(CondConv2dOptions(8, 8, 3).effective_padding(), Pair2(1));
  EXPECT_EQ(CondConv2dOptions(8, 8, 3).stride(2).effective_padding(), Pair2(1));
  EXPECT_EQ(CondConv2dOptions(8, 8, 5).dilation(2).effective_padding(), Pair2(4));
  EXPECT_EQ(CondConv2dOptions(8, 8, 4).stride(2).effective_padding(), Pair2(2));
  const CondConv2d m(CondConv2dOptions(8, 6, 3).bias(true).num_experts(3));
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(m.state_dict().entries()[0].value.shape(), (Shape{3, 6 * 8 * 9}));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({2, 8, 5, 5}), Tensor::zeros({2, 4}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'routing_weights' expected shape "
                                                  "[2, 3], got [2, 4]")));
  const StateDict w = test::fixture("gates/cond_c6_co6_k1").weights();  // no bias, [5, 36]
  EXPECT_THAT(test::Call([&] { (void)CondConv2dOptions::from_state_dict(w, 6, 3); }),
              ThrowsMessage<ValueError>(HasSubstr("'weight' [5, 36] does not hold K experts of "
                                                  "Co x 6 x 3 x 3")));
  EXPECT_EQ(CondConv2dOptions::from_state_dict(w, 6, 1).out_channels(), 6);
}

TEST(CondConvRouting, MatchesTimmsCondConvResidual) {
  const auto fx = test::fixture("gates/cond_routing_c8_e3");
  CondConvRouting m(CondConvRoutingOptions::from_state_dict(fx.weights()));
  m.load_state_dict(fx.weights());
  EXPECT_TENSOR_NEAR(m.forward(fx.tensor("input")), fx.tensor("output"), test::Tolerance{});
  // Under the block's prefix, as in a CondConvResidual state_dict.
  StateDict nested;
  const StateDict flat = fx.weights();
  for (const auto& e : flat.entries()) nested.set("routing_fn." + e.key, e.value);
  const auto o = CondConvRoutingOptions::from_state_dict(nested, "routing_fn");
  EXPECT_EQ(o.in_channels(), 8);
  EXPECT_EQ(o.num_experts(), 3);
}

TEST(CondConv2d, ForwardIsThreadSafe) {
  CondConv2d m(CondConv2dOptions(8, 8, 3).bias(true));
  test::randomise(m, 6);
  const Tensor x = test::random_tensor({3, 8, 9, 7}, 5);
  const Tensor r = test::random_tensor({3, 4}, 6, 0.0f, 1.0f);
  test::expect_thread_safe([&] { return m.forward(x, r); });
}

}  // namespace
}  // namespace cvattn
