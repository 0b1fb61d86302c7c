// The activations of issue 18 (gelu, silu, hardswish, hardsigmoid, mish, relu6), the ActLayer
// names and the activation() dispatcher, against PyTorch's F.* (tests/fixtures/layers.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/modules/layer_kinds.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};
constexpr test::Tolerance kExact{0, 0};

Tensor apply_act(const std::string& name, const Tensor& x) {
  if (name == "gelu") return F::gelu(x);
  if (name == "gelu_tanh") return F::gelu(x, GeluApproximate::tanh);
  if (name == "silu") return F::silu(x);
  if (name == "hardswish") return F::hardswish(x);
  if (name == "hardsigmoid") return F::hardsigmoid(x);
  if (name == "mish") return F::mish(x);
  if (name == "relu6") return F::relu6(x);
  if (name == "relu") return F::relu(x);
  if (name == "sigmoid") return F::sigmoid(x);
  if (name == "tanh") return F::tanh(x);
  throw std::logic_error("unknown activation " + name);
}

TEST(Activations, MatchPyTorchIncludingNaNAndInf) {
  const auto cases = test::fixtures_in("layers", "act_");
  ASSERT_EQ(cases.size(), 10u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const std::string name = fx.params()["act"].get<std::string>();
    EXPECT_TENSOR_NEAR(apply_act(name, fx.tensor("input")), fx.tensor("output"), kTol);
  }
}

TEST(Activations, DispatcherMatchesEachFunction) {
  for (const auto& fx : test::fixtures_in("layers", "act_")) {
    SCOPED_TRACE(fx.name());
    const std::string name = fx.params()["act"].get<std::string>();
    const ActLayer act = parse_act_layer(name);
    EXPECT_TENSOR_NEAR(F::activation(fx.tensor("input"), act), fx.tensor("output"), kTol);
  }
  const Tensor x = test::random_tensor({2, 3}, 1);
  EXPECT_EQ(F::activation(x, ActLayer::identity).data(), x.data());  // identity shares storage
}

TEST(Activations, InPlaceMatchesPyTorchAndKeepsTheStorage) {
  for (const auto& fx : test::fixtures_in("layers", "act_")) {
    SCOPED_TRACE(fx.name());
    const ActLayer act = parse_act_layer(fx.params()["act"].get<std::string>());
    Tensor x = fx.tensor("input").clone();
    const float* storage = x.data();
    F::activation_(x, act);
    EXPECT_EQ(x.data(), storage);
    EXPECT_TENSOR_NEAR(x, fx.tensor("output"), kTol);
  }
  Tensor big = test::random_tensor({3, 70001}, 2);  // several chunks and a tail
  const Tensor expected = F::silu(big);
  F::activation_(big, ActLayer::silu);
  EXPECT_TENSOR_NEAR(big, expected, kExact);
  Tensor undefined;
  EXPECT_THROW(F::activation_(undefined, ActLayer::relu), cvattn::Error);
}

// Large tensors are split into chunks over threads; every chunk, tail included, must agree
// with the formula evaluated in double.
TEST(Activations, LargeTensorsMatchTheFormulaInDouble) {
  const Tensor x = test::random_tensor({3, 33331}, 5, -9.0f, 9.0f);
  const Tensor g = F::gelu(x), gt = F::gelu(x, GeluApproximate::tanh), s = F::silu(x),
               m = F::mish(x), hs = F::hardswish(x), hg = F::hardsigmoid(x);
  for (std::int64_t i = 0; i < x.numel(); i += 101) {
    const double v = x[i];
    const double tol = 1e-5 * (1 + std::abs(v));
    EXPECT_NEAR(g[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), tol) << i;
    EXPECT_NEAR(gt[i], 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))),
                tol)
        << i;
    EXPECT_NEAR(s[i], v / (1 + std::exp(-v)), tol) << i;
    EXPECT_NEAR(m[i], v * std::tanh(std::log1p(std::exp(v))), tol) << i;
    EXPECT_NEAR(hs[i], v * std::min(std::max(v + 3, 0.0), 6.0) / 6, tol) << i;
    EXPECT_NEAR(hg[i], std::min(std::max(v + 3, 0.0), 6.0) / 6, tol) << i;
  }
}

TEST(Activations, KeepShapeOfAnyRank) {
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3, 4, 5, 1, 2}, Shape{0, 3}}) {
    const Tensor x = Tensor::zeros(shape);
    EXPECT_EQ(F::gelu(x).shape(), shape);
    EXPECT_EQ(F::mish(x).shape(), shape);
  }
}

TEST(Activations, RejectUndefinedInput) {
  EXPECT_THAT(test::Call([] { (void)F::gelu(Tensor()); }),
              ThrowsMessage<ShapeError>(HasSubstr("gelu")));
  EXPECT_THAT(test::Call([] { (void)F::activation(Tensor(), ActLayer::identity); }),
              ThrowsMessage<ShapeError>(HasSubstr("activation")));
}

TEST(ActLayer, ParsesTimmNamesAndAliases) {
  EXPECT_EQ(parse_act_layer("swish"), ActLayer::silu);
  EXPECT_EQ(parse_act_layer("hardswish"), ActLayer::hard_swish);
  EXPECT_EQ(parse_act_layer("hardsigmoid"), ActLayer::hard_sigmoid);
  for (const ActLayer a : {ActLayer::identity, ActLayer::relu, ActLayer::relu6, ActLayer::sigmoid,
                           ActLayer::tanh, ActLayer::silu, ActLayer::gelu, ActLayer::gelu_tanh,
                           ActLayer::hard_swish, ActLayer::hard_sigmoid, ActLayer::mish}) {
    EXPECT_EQ(parse_act_layer(to_string(a)), a) << to_string(a);
  }
  EXPECT_THAT(test::Call([] { (void)parse_act_layer("leaky"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown act_layer 'leaky'")));
  EXPECT_EQ(parse_gelu_approximate("tanh"), GeluApproximate::tanh);
  EXPECT_STREQ(to_string(GeluApproximate::none), "none");
  EXPECT_THAT(test::Call([] { (void)parse_gelu_approximate("erf"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown approximate 'erf'")));
}

TEST(Activations, AreThreadSafe) {
  const Tensor x = test::random_tensor({4, 1000}, 3, -6.0f, 6.0f);
  const Tensor ref = F::gelu(x);
  std::vector<std::thread> threads;
  std::vector<Tensor> out(8);
  for (int t = 0; t < 8; ++t) threads.emplace_back([&, t] { out[t] = F::gelu(x); });
  for (auto& th : threads) th.join();
  for (const auto& o : out) EXPECT_TENSOR_NEAR(o, ref, kExact);
}

}  // namespace
}  // namespace cvattn
