#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/squeeze_excitation.hpp"
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

std::vector<test::Fixture> se_cases() {
  std::vector<test::Fixture> out;
  for (auto& fx : test::fixtures_in("channel")) {
    if (fx.name().rfind("se_", 0) == 0) out.push_back(fx);
  }
  return out;
}

// Options from the weights plus the switches that leave no trace in them.
SqueezeExcitationOptions options_for(const test::Fixture& fx) {
  const auto& p = fx.params();
  return SqueezeExcitationOptions::from_state_dict(fx.weights())
      .add_maxpool(p.value("add_maxpool", false))
      .gate_layer(parse_gate_layer(p.value("gate_layer", std::string("sigmoid"))));
}

// A module with every parameter set to a deterministic pseudo-random value.
SqueezeExcitation random_se(const SqueezeExcitationOptions& o, std::uint64_t seed) {
  SqueezeExcitation se(o);
  StateDict d = se.state_dict();
  StateDict filled;
  for (const auto& e : d.entries()) {
    if (e.integer) continue;
    Tensor t = test::random_tensor(e.value.shape(), seed++);
    if (e.key == "bn.running_var") {
      for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = 1.0f + 0.5f * t[i];
    }
    filled.set(e.key, t);
  }
  se.load_state_dict(filled);
  return se;
}

TEST(SqueezeExcitation, MatchesTimm) {
  const auto cases = se_cases();
  ASSERT_GE(cases.size(), 9u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const SqueezeExcitationOptions o = options_for(fx);
    EXPECT_EQ(o.channels(), p["channels"].get<std::int64_t>());
    EXPECT_EQ(o.reduced_channels(), p["rd_channels"].get<std::int64_t>());
    EXPECT_EQ(o.bias(), p.value("bias", true));
    EXPECT_EQ(o.norm_layer() == NormLayer::batch_norm, p["norm"].get<bool>());
    SqueezeExcitation se(o);
    se.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = se.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(se.forward(x), r.output, (test::Tolerance{0, 0}));
  }
}

TEST(SqueezeExcitation, OldTimmWidthLoadsByShape) {
  // timm <= 0.4.9 made R = max(8, C // 16) = 12 for C = 200; today's rule gives 16.
  const auto fx = test::fixture("channel/se_c200_old_r12");
  EXPECT_EQ(SqueezeExcitationOptions(200).reduced_channels(), 16);
  const SqueezeExcitationOptions o = SqueezeExcitationOptions::from_state_dict(fx.weights());
  EXPECT_EQ(o.reduced_channels(), 12);
  SqueezeExcitation fresh(SqueezeExcitationOptions(200));
  EXPECT_THAT(test::Call([&] { fresh.load_state_dict(fx.weights()); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("'fc1.weight' expected [16, 200, 1, 1], got [12, 200, 1, 1]")));
}

TEST(SqueezeExcitation, ReducedChannelsFollowTimm) {
  EXPECT_EQ(SqueezeExcitationOptions(64).reduced_channels(), 8);
  EXPECT_EQ(SqueezeExcitationOptions(24).reduced_channels(), 8);
  EXPECT_EQ(SqueezeExcitationOptions(192).reduced_channels(), 16);
  EXPECT_EQ(SqueezeExcitationOptions(320).reduced_channels(), 24);
  EXPECT_EQ(SqueezeExcitationOptions(2048).reduced_channels(), 128);
  EXPECT_EQ(SqueezeExcitationOptions(64).rd_channels(5).reduced_channels(), 5);
  EXPECT_EQ(SqueezeExcitationOptions(40).rd_ratio(0.25).rd_divisor(4).reduced_channels(), 12);
}

TEST(SqueezeExcitation, WorkedExample) {
  // C = 2, R = 1: s = [3, 1]; z = ReLU(1*3 - 1*1 + 0.5) = 2.5; u = [2*2.5 + 0, -2.5 + 1];
  // g = sigmoid([5, -1.5]).
  SqueezeExcitation se(SqueezeExcitationOptions(2).rd_channels(1));
  StateDict d;
  d.set("fc1.weight", Tensor::from_vector({1, 2, 1, 1}, {1.0f, -1.0f}));
  d.set("fc1.bias", Tensor::from_vector({1}, {0.5f}));
  d.set("fc2.weight", Tensor::from_vector({2, 1, 1, 1}, {2.0f, -1.0f}));
  d.set("fc2.bias", Tensor::from_vector({2}, {0.0f, 1.0f}));
  se.load_state_dict(d);
  // Plane 0 has mean 3 (values 1..5), plane 1 mean 1; 1 x 5 images.
  const Tensor x = Tensor::from_vector({1, 2, 1, 5}, {1, 2, 3, 4, 5, 0, 2, 0, 2, 1});
  const Attended r = se.forward_with_maps(x);
  const float g0 = 0.99330715f, g1 = 0.18242552f;
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), Tensor::from_vector({1, 2}, {g0, g1}),
                     (test::Tolerance{1e-7, 1e-6}));
  EXPECT_TENSOR_NEAR(r.output,
                     Tensor::from_vector({1, 2, 1, 5}, {g0, 2 * g0, 3 * g0, 4 * g0, 5 * g0, 0,
                                                        2 * g1, 0, 2 * g1, g1}),
                     (test::Tolerance{1e-6, 1e-6}));
}

TEST(SqueezeExcitation, ShapeContract) {
  const SqueezeExcitation se = random_se(SqueezeExcitationOptions(24).add_maxpool(true), 7);
  const Tensor x = test::random_tensor({3, 24, 7, 5}, 1);
  const Attended r = se.forward_with_maps(x);
  EXPECT_EQ(r.output.shape(), (Shape{3, 24, 7, 5}));
  EXPECT_EQ(r.maps.at(maps::kAttention).shape(), (Shape{3, 24}));
  EXPECT_FALSE(se.forward_with_maps(x).maps.contains(maps::kChannelAttention));
  EXPECT_TRUE(se.forward(x).defined());
  // An empty batch is valid, as in PyTorch.
  const Attended empty = se.forward_with_maps(Tensor::zeros({0, 24, 4, 4}));
  EXPECT_EQ(empty.output.shape(), (Shape{0, 24, 4, 4}));
  EXPECT_EQ(empty.maps.at(maps::kAttention).shape(), (Shape{0, 24}));
  EXPECT_EQ(se.state_dict().keys(),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(se.describe(),
            "SqueezeExcitation(channels=24, rd_channels=8, add_maxpool=true, bias=true, "
            "norm_layer=none, gate_layer=sigmoid)");
}

TEST(SqueezeExcitation, GateLiesInUnitIntervalAndScalesEachPlane) {
  for (const GateLayer gate : {GateLayer::sigmoid, GateLayer::hard_sigmoid}) {
    const SqueezeExcitation se = random_se(
        SqueezeExcitationOptions(40).norm_layer(NormLayer::batch_norm).gate_layer(gate), 11);
    const Tensor x = test::random_tensor({2, 40, 6, 5}, 3, -4.0f, 4.0f);
    const Attended r = se.forward_with_maps(x);
    const Tensor& g = r.maps.at(maps::kAttention);
    for (std::int64_t i = 0; i < g.numel(); ++i) {
      EXPECT_GE(g[i], 0.0f);
      EXPECT_LE(g[i], 1.0f);
    }
    // y is exactly x * g[n, c] (one float multiply, as in PyTorch).
    for (std::int64_t n = 0; n < 2; ++n) {
      for (std::int64_t c = 0; c < 40; ++c) {
        for (std::int64_t i = 0; i < 30; ++i) {
          const std::int64_t off = (n * 40 + c) * 30 + i;
          ASSERT_EQ(r.output[off], x[off] * g[n * 40 + c]);
        }
      }
    }
  }
}

TEST(SqueezeExcitation, LargeOutputsTakeTheStreamingPathExactly) {
  // 2 x 64 x 97 x 91 floats = 4.5 MB, over the streaming-store threshold; 97 * 91 is odd, so
  // most planes start off a 16-byte boundary and exercise the unaligned head.
  const SqueezeExcitation se = random_se(SqueezeExcitationOptions(64), 31);
  const Tensor x = test::random_tensor({2, 64, 97, 91}, 12);
  for (const int threads : {1, 2}) {
    const test::ThreadScope scope(threads);
    const Attended r = se.forward_with_maps(x);
    const Tensor& g = r.maps.at(maps::kAttention);
    const std::int64_t hw = 97 * 91;
    for (std::int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(r.output[i], x[i] * g[i / hw]) << i;
  }
}

TEST(SqueezeExcitation, ZeroExcitationHalvesTheInput) {
  // fc2 = 0 and no bias: the logits are 0, the sigmoid gate is exactly 0.5.
  SqueezeExcitation se(SqueezeExcitationOptions(16).bias(false));
  const Tensor x = test::random_tensor({2, 16, 3, 3}, 5);
  const Tensor y = se.forward(x);
  for (std::int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y[i], 0.5f * x[i]);
}

TEST(SqueezeExcitation, NanPropagatesWithoutCrashing) {
  const SqueezeExcitation se = random_se(SqueezeExcitationOptions(16).add_maxpool(true), 3);
  Tensor x = test::random_tensor({2, 16, 4, 4}, 9);
  x[5] = std::nanf("");  // sample 0, channel 0
  const Attended r = se.forward_with_maps(x);
  // The NaN poisons sample 0's pooled vector, hence all its gates; sample 1 is untouched.
  EXPECT_TRUE(std::isnan(r.maps.at(maps::kAttention)[3]));
  EXPECT_FALSE(std::isnan(r.maps.at(maps::kAttention)[16 + 3]));
}

TEST(SqueezeExcitation, RejectsWrongInput) {
  const SqueezeExcitation se(SqueezeExcitationOptions(64));
  EXPECT_THAT(test::Call([&] {
                (void)se.forward(Tensor::zeros({1, 32, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "SqueezeExcitation::forward: tensor 'x' expected shape [*, 64, *, *], got "
                  "[1, 32, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)se.forward(Tensor::zeros({64, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected shape [*, 64, *, *], got [64, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)se.forward(Tensor::zeros({1, 64, 0, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected H, W >= 1")));
  EXPECT_THAT(test::Call([&] { (void)se.forward(Tensor()); }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'x' is undefined")));
}

TEST(SqueezeExcitation, RejectsInvalidOptions) {
  EXPECT_THAT(test::Call([] { SqueezeExcitation se(SqueezeExcitationOptions(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("channels must be >= 1, got 0")));
  EXPECT_THAT(test::Call([] { SqueezeExcitation se(SqueezeExcitationOptions(64).rd_ratio(0.0)); }),
              ThrowsMessage<ValueError>(HasSubstr("rd_ratio must be positive and finite")));
  EXPECT_THAT(test::Call([] { SqueezeExcitation se(SqueezeExcitationOptions(64).rd_ratio(NAN)); }),
              ThrowsMessage<ValueError>(HasSubstr("rd_ratio must be positive and finite")));
  EXPECT_THAT(test::Call([] { SqueezeExcitation se(SqueezeExcitationOptions(64).rd_divisor(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("divisor must be in [1, 2^30], got 0")));
  EXPECT_THAT(
      test::Call([] { SqueezeExcitation se(SqueezeExcitationOptions(64).rd_channels(-2)); }),
      ThrowsMessage<ValueError>(HasSubstr("rd_channels must be >= 0")));
  EXPECT_THAT(test::Call([] { (void)parse_gate_layer("swish"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown gate_layer 'swish'")));
  EXPECT_THAT(test::Call([] { (void)parse_norm_layer("layer_norm"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown norm_layer 'layer_norm'")));
}

TEST(SqueezeExcitation, FromStateDictErrorsNameTheKey) {
  StateDict d;
  EXPECT_THAT(test::Call([&] { (void)SqueezeExcitationOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "SqueezeExcitationOptions::from_state_dict: missing 'fc1.weight' (keys: none)")));
  d.set("fc1.weight", Tensor::zeros({8, 64}));
  EXPECT_THAT(
      test::Call([&] { (void)SqueezeExcitationOptions::from_state_dict(d); }),
      ThrowsMessage<ValueError>(HasSubstr("'fc1.weight' expected [*, *, 1, 1], got [8, 64]")));
  d.set("fc1.weight", Tensor::zeros({0, 64, 1, 1}));
  EXPECT_THAT(test::Call([&] { (void)SqueezeExcitationOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("with R, C >= 1, got [0, 64, 1, 1]")));
}

TEST(SqueezeExcitation, StrictLoadingReportsEveryProblem) {
  SqueezeExcitation se(SqueezeExcitationOptions(64));
  StateDict d;
  d.set("fc1.weight", Tensor::zeros({64, 8, 1, 1}));
  d.set("fc1.bias", Tensor::zeros({8}));
  d.set("fc2.weight", Tensor::zeros({64, 8, 1, 1}));
  d.set("fc3.weight", Tensor::zeros({1}));
  EXPECT_THAT(test::Call([&] { se.load_state_dict(d); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("load_state_dict(SqueezeExcitation(channels=64, rd_channels=8, "
                            "add_maxpool=false, bias=true, norm_layer=none, gate_layer=sigmoid)): "
                            "missing 'fc2.bias'; unexpected 'fc3.weight'; 'fc1.weight' expected "
                            "[8, 64, 1, 1], got [64, 8, 1, 1]")));
  // BatchNorm keys select the norm; without it they are unexpected.
  const auto fx = test::fixture("channel/se_c72_bn");
  SqueezeExcitation plain(SqueezeExcitationOptions(72));
  EXPECT_THAT(test::Call([&] { plain.load_state_dict(fx.weights()); }),
              ThrowsMessage<ValueError>(HasSubstr("unexpected 'bn.bias'")));
}

TEST(SqueezeExcitation, NumBatchesTrackedIsOptional) {
  const auto fx = test::fixture("channel/se_c72_bn");
  StateDict d = fx.weights();
  ASSERT_TRUE(d.erase("bn.num_batches_tracked"));
  SqueezeExcitation se(SqueezeExcitationOptions::from_state_dict(d));
  se.load_state_dict(d);
  EXPECT_TENSOR_NEAR(se.forward(fx.tensor("input")), fx.tensor("output"), test::Tolerance{});
}

TEST(SqueezeExcitation, ForwardIsThreadSafe) {
  const SqueezeExcitation se = random_se(SqueezeExcitationOptions(48).add_maxpool(true), 21);
  const Tensor x = test::random_tensor({3, 48, 9, 7}, 4);
  test::expect_thread_safe([&] { return se.forward(x); });
}

TEST(SqueezeExcitation, ThreadCountDoesNotChangeTheResult) {
  const SqueezeExcitation se = random_se(SqueezeExcitationOptions(40), 5);
  for (const std::int64_t n : {1, 3}) {  // N < threads splits one sample over the threads
    const Tensor x = test::random_tensor({n, 40, 45, 47}, 8);  // over the serial cut-off
    test::expect_same_on_one_and_two_threads([&] { return se.forward(x); });
  }
}

}  // namespace
}  // namespace cvattn
