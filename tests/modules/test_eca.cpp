#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/eca.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<test::Fixture> eca_cases() {
  std::vector<test::Fixture> out;
  for (auto& fx : test::fixtures_in("channel")) {
    if (fx.name().rfind("eca_", 0) == 0) out.push_back(fx);
  }
  return out;
}

GateLayer gate_of(const test::Fixture& fx) {
  return parse_gate_layer(fx.params().value("gate_layer", std::string("sigmoid")));
}

// The options the fixture's timm module was built with.
EcaOptions constructor_options(const test::Fixture& fx) {
  const auto& p = fx.params();
  EcaOptions o = p["channels_given"].get<bool>() ? EcaOptions(p["channels"].get<std::int64_t>())
                                                 : EcaOptions();
  o.kernel_size(p.value("kernel_size", std::int64_t{3}))
      .gamma(p.value("gamma", 2.0))
      .beta(p.value("beta", 1.0))
      .use_mlp(p.value("use_mlp", false))
      .gate_layer(gate_of(fx));
  return o;
}

Eca random_eca(const EcaOptions& o, std::uint64_t seed) {
  Eca eca(o);
  StateDict filled;
  const StateDict current = eca.state_dict();
  for (const auto& e : current.entries()) {
    filled.set(e.key, test::random_tensor(e.value.shape(), seed++));
  }
  eca.load_state_dict(filled);
  return eca;
}

TEST(Eca, MatchesTimm) {
  const auto cases = eca_cases();
  ASSERT_GE(cases.size(), 7u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const Tensor x = fx.tensor("input");
    // Built as timm was (kernel size from channels, gamma, beta) and from the weights alone.
    const EcaOptions built = constructor_options(fx);
    const EcaOptions inferred = EcaOptions::from_state_dict(fx.weights()).gate_layer(gate_of(fx));
    EXPECT_EQ(built.effective_kernel_size(), fx.params()["kernel_size"].get<std::int64_t>());
    EXPECT_EQ(inferred.effective_kernel_size(), built.effective_kernel_size());
    EXPECT_EQ(inferred.use_mlp(), built.use_mlp());
    for (const EcaOptions& o : {built, inferred}) {
      Eca eca(o);
      eca.load_state_dict(fx.weights());
      const Attended r = eca.forward_with_maps(x);
      EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
      EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
      EXPECT_TENSOR_NEAR(eca.forward(x), r.output, (test::Tolerance{0, 0}));
    }
  }
}

TEST(Eca, KernelSizeFromChannels) {
  // docs/modules.md §1.1 ECA column and §3 ranges (gamma 2, beta 1).
  const std::pair<std::int64_t, std::int64_t> table[] = {
      {16, 3},   {32, 3},    {64, 3},  {72, 3},  {96, 3},   {127, 3},  {128, 5},
      {192, 5},  {200, 5},   {256, 5}, {320, 5}, {512, 5},  {1024, 5}, {2047, 5},
      {2048, 7}, {32767, 7}, {1, 3},   {2, 3},   {32768, 9}};
  for (const auto& [c, k] : table) {
    EXPECT_EQ(EcaOptions(c).effective_kernel_size(), k) << "C=" << c;
  }
  // channels given: kernel_size is ignored, as in timm.
  EXPECT_EQ(EcaOptions(64).kernel_size(9).effective_kernel_size(), 3);
  EXPECT_EQ(EcaOptions().kernel_size(9).effective_kernel_size(), 9);
  EXPECT_EQ(EcaOptions(130).gamma(1).beta(2).effective_kernel_size(), 9);
  EXPECT_EQ(EcaOptions(64).gamma(-2).effective_kernel_size(), 3);  // negative t -> max(k, 3)
  EXPECT_EQ(EcaOptions(72).use_mlp(true).reduced_channels(), 16);  // 9 -> 8 < 0.9 * 9 -> 16
}

TEST(Eca, WorkedExample) {
  // docs/modules.md §3: s = [1, 2, 3, 4], weight [0.5, 1, -1] -> u = [-1, -0.5, 0, 5.5].
  Eca eca(EcaOptions().kernel_size(3));
  StateDict d;
  d.set("conv.weight", Tensor::from_vector({1, 1, 3}, {0.5f, 1.0f, -1.0f}));
  eca.load_state_dict(d);
  // 1 x 2 planes whose means are 1, 2, 3, 4.
  const Tensor x = Tensor::from_vector({1, 4, 1, 2}, {0, 2, 1, 3, 3, 3, 5, 3});
  const Attended r = eca.forward_with_maps(x);
  auto sig = [](double u) { return static_cast<float>(1.0 / (1.0 + std::exp(-u))); };
  const Tensor g = Tensor::from_vector({1, 4}, {sig(-1), sig(-0.5), sig(0), sig(5.5)});
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), g, (test::Tolerance{1e-7, 1e-6}));
  EXPECT_EQ(r.output[0], 0.0f);
  EXPECT_EQ(r.output[1], 2.0f * r.maps.at(maps::kAttention)[0]);
  EXPECT_EQ(r.output[7], 3.0f * r.maps.at(maps::kAttention)[3]);
}

TEST(Eca, ShapeContract) {
  const Eca any = random_eca(EcaOptions().kernel_size(5), 3);
  for (const std::int64_t c : {1, 2, 7, 33}) {  // channels=None: every C, even C < k
    const Attended r = any.forward_with_maps(test::random_tensor({2, c, 5, 3}, 1));
    EXPECT_EQ(r.output.shape(), (Shape{2, c, 5, 3}));
    EXPECT_EQ(r.maps.at(maps::kAttention).shape(), (Shape{2, c}));
  }
  const Eca fixed = random_eca(EcaOptions(24), 4);
  EXPECT_EQ(fixed.kernel_size(), 3);
  EXPECT_EQ(fixed.forward(test::random_tensor({3, 24, 7, 5}, 2)).shape(), (Shape{3, 24, 7, 5}));
  EXPECT_EQ(fixed.forward(Tensor::zeros({0, 24, 2, 2})).shape(), (Shape{0, 24, 2, 2}));
  EXPECT_EQ(fixed.describe(), "Eca(channels=24, kernel_size=3, gate_layer=sigmoid)");
  const Eca mlp(EcaOptions(72).use_mlp(true));
  EXPECT_EQ(mlp.state_dict().keys(),
            (std::vector<std::string>{"conv.weight", "conv.bias", "conv2.weight", "conv2.bias"}));
  EXPECT_EQ(mlp.describe(),
            "Eca(channels=72, kernel_size=3, use_mlp=true, rd_channels=16, gate_layer=sigmoid)");
}

TEST(Eca, GateLiesInUnitIntervalAndIsLocal) {
  const Eca eca = random_eca(EcaOptions().kernel_size(3), 9);
  Tensor x = test::random_tensor({1, 32, 4, 4}, 6, -3.0f, 3.0f);
  const Tensor g0 = eca.forward_with_maps(x).maps.at(maps::kAttention);
  for (std::int64_t i = 0; i < g0.numel(); ++i) {
    EXPECT_GT(g0[i], 0.0f);
    EXPECT_LT(g0[i], 1.0f);
  }
  // Changing channel 10 moves only the gates of channels 9, 10, 11 (k = 3).
  for (std::int64_t i = 0; i < 16; ++i) x[10 * 16 + i] += 1.0f;
  const Tensor g1 = eca.forward_with_maps(x).maps.at(maps::kAttention);
  for (std::int64_t c = 0; c < 32; ++c) {
    if (c >= 9 && c <= 11) {
      EXPECT_NE(g1[c], g0[c]) << c;
    } else {
      EXPECT_EQ(g1[c], g0[c]) << c;
    }
  }
}

TEST(Eca, RejectsWrongInput) {
  const Eca eca(EcaOptions(64));
  EXPECT_THAT(test::Call([&] {
                (void)eca.forward(Tensor::zeros({1, 32, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "Eca::forward: tensor 'x' expected shape [*, 64, *, *], got [1, 32, 8, 8]")));
  const Eca any(EcaOptions{});
  EXPECT_THAT(test::Call([&] {
                (void)any.forward(Tensor::zeros({2, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, *, *, *], got [2, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)any.forward(Tensor::zeros({2, 8, 3, 0}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected H, W >= 1")));
}

TEST(Eca, RejectsInvalidOptions) {
  EXPECT_THAT(test::Call([] { Eca e(EcaOptions().kernel_size(4)); }),
              ThrowsMessage<ValueError>(HasSubstr("kernel_size must be odd")));
  EXPECT_THAT(test::Call([] { Eca e(EcaOptions().kernel_size(-3)); }),
              ThrowsMessage<ValueError>(HasSubstr("kernel_size must be odd")));
  EXPECT_THAT(test::Call([] { Eca e(EcaOptions(-1)); }),
              ThrowsMessage<ValueError>(HasSubstr("channels must be >= 0")));
  EXPECT_THAT(test::Call([] { Eca e(EcaOptions(64).gamma(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("gamma must be finite and non-zero")));
  EXPECT_THAT(test::Call([] { Eca e(EcaOptions(64).gamma(1e-300)); }),
              ThrowsMessage<ValueError>(HasSubstr("is too large")));
  EXPECT_THAT(test::Call([] { Eca e(EcaOptions().use_mlp(true)); }),
              ThrowsMessage<ValueError>(HasSubstr("use_mlp needs channels or rd_channels")));
}

TEST(Eca, LoadingErrorsNameTheKey) {
  StateDict d;
  EXPECT_THAT(test::Call([&] { (void)EcaOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'conv.weight'")));
  d.set("conv.weight", Tensor::zeros({1, 2, 3}));
  EXPECT_THAT(
      test::Call([&] { (void)EcaOptions::from_state_dict(d); }),
      ThrowsMessage<ValueError>(HasSubstr("'conv.weight' expected [1, 1, *], got [1, 2, 3]")));
  d.set("conv2.weight", Tensor::zeros({1, 16, 3}));
  EXPECT_THAT(
      test::Call([&] { (void)EcaOptions::from_state_dict(d); }),
      ThrowsMessage<ValueError>(HasSubstr("'conv.weight' expected [16, 1, 1], got [1, 2, 3]")));
  // A C=200 module has k=5: k=3 weights do not fit.
  const auto fx = test::fixture("channel/eca_c64_k3");
  Eca eca(EcaOptions(200));
  EXPECT_THAT(
      test::Call([&] { eca.load_state_dict(fx.weights()); }),
      ThrowsMessage<ValueError>(HasSubstr("'conv.weight' expected [1, 1, 5], got [1, 1, 3]")));
  Eca mlp(EcaOptions(72).use_mlp(true));
  EXPECT_THAT(test::Call([&] { mlp.load_state_dict(fx.weights()); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'conv.bias', 'conv2.weight'")));
}

TEST(Eca, ForwardIsThreadSafe) {
  const Eca eca = random_eca(EcaOptions(72).use_mlp(true), 13);
  const Tensor x = test::random_tensor({3, 72, 9, 7}, 4);
  test::expect_thread_safe([&] { return eca.forward(x); });
}

TEST(Eca, ThreadCountDoesNotChangeTheResult) {
  const Eca eca = random_eca(EcaOptions(40), 5);
  for (const std::int64_t n : {1, 3}) {
    const Tensor x = test::random_tensor({n, 40, 45, 47}, 8);  // over the serial cut-off
    test::expect_same_on_one_and_two_threads([&] { return eca.forward(x); });
  }
}

}  // namespace
}  // namespace cvattn
