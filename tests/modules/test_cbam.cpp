#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/cbam.hpp"
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

std::vector<test::Fixture> cbam_cases() {
  std::vector<test::Fixture> out;
  for (auto& fx : test::fixtures_in("channel")) {
    if (fx.name().rfind("cbam_", 0) == 0) out.push_back(fx);
  }
  return out;
}

Cbam random_cbam(const CbamOptions& o, std::uint64_t seed) {
  Cbam cbam(o);
  StateDict filled;
  const StateDict current = cbam.state_dict();
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = test::random_tensor(e.value.shape(), seed++);
    if (e.key == "spatial.conv.bn.running_var") t[0] = 1.3f;
    filled.set(e.key, t);
  }
  cbam.load_state_dict(filled);
  return cbam;
}

TEST(Cbam, MatchesTimm) {
  const auto cases = cbam_cases();
  ASSERT_GE(cases.size(), 7u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const CbamOptions o =
        CbamOptions::from_state_dict(fx.weights())
            .gate_layer(parse_gate_layer(p.value("gate_layer", std::string("sigmoid"))));
    EXPECT_EQ(o.channels(), p["channels"].get<std::int64_t>());
    EXPECT_EQ(o.reduced_channels(), p["rd_channels"].get<std::int64_t>());
    EXPECT_EQ(o.spatial_kernel_size(), p["spatial_kernel_size"].get<std::int64_t>());
    EXPECT_EQ(o.mlp_bias(), p.value("mlp_bias", false));
    Cbam cbam(o);
    cbam.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = cbam.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kChannelAttention), fx.tensor("channel_attention"),
                       test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kSpatialAttention), fx.tensor("spatial_attention"),
                       test::Tolerance{});
    EXPECT_TENSOR_NEAR(cbam.forward(x), r.output, (test::Tolerance{0, 0}));
  }
}

TEST(Cbam, OldTimmWidthLoadsByShape) {
  // timm <= 0.4.9: R = C // 16 = 4 for C = 72; today's rule gives trunc(4.5 + 0.5) = 5.
  const auto fx = test::fixture("channel/cbam_c72_old_r4");
  EXPECT_EQ(CbamOptions(72).reduced_channels(), 5);
  EXPECT_EQ(CbamOptions::from_state_dict(fx.weights()).reduced_channels(), 4);
  Cbam fresh(CbamOptions(72));
  EXPECT_THAT(test::Call([&] { fresh.load_state_dict(fx.weights()); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("'channel.fc1.weight' expected [5, 72, 1, 1], got [4, 72, 1, 1]")));
}

TEST(Cbam, ReducedChannelsFollowTimm) {
  const std::pair<std::int64_t, std::int64_t> table[] = {{16, 1}, {32, 2},   {64, 4},   {72, 5},
                                                         {96, 6}, {200, 13}, {256, 16}, {2048, 128},
                                                         {1, 1},  {8, 1}};
  for (const auto& [c, r] : table) EXPECT_EQ(CbamOptions(c).reduced_channels(), r) << c;
  EXPECT_EQ(CbamOptions(64).rd_channels(3).reduced_channels(), 3);
}

TEST(Cbam, HandCheckedSpatialGate) {
  // Channel MLP all zero -> channel gate 0.5. One channel, 1 x 3 image [2, 4, 6]:
  // x1 = [1, 2, 3]; mean_c = max_c = x1. Kernel k = 3 with only the centre taps set
  // (mean 0.5, max 0.25) -> conv = 0.75 * x1; BN weight 2, bias -1, mean 0, var 1 - eps
  // -> q = 1.5 * x1 - 1 = [0.5, 2, 3.5].
  Cbam cbam(CbamOptions(1).spatial_kernel_size(3));
  StateDict d = cbam.state_dict();
  StateDict w;
  for (const auto& e : d.entries()) {
    if (!e.integer) w.set(e.key, Tensor::zeros(e.value.shape()));
  }
  Tensor conv = Tensor::zeros({1, 2, 3, 3});
  conv[4] = 0.5f;       // channel 0 (mean), centre
  conv[9 + 4] = 0.25f;  // channel 1 (max), centre
  w.set("spatial.conv.conv.weight", conv);
  w.set("spatial.conv.bn.weight", Tensor::full({1}, 2.0f));
  w.set("spatial.conv.bn.bias", Tensor::full({1}, -1.0f));
  w.set("spatial.conv.bn.running_var", Tensor::full({1}, 1.0f - 1e-5f));
  cbam.load_state_dict(w);
  const Attended r = cbam.forward_with_maps(Tensor::from_vector({1, 1, 1, 3}, {2, 4, 6}));
  auto sig = [](double u) { return static_cast<float>(1.0 / (1.0 + std::exp(-u))); };
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kChannelAttention), Tensor::full({1, 1}, 0.5f),
                     (test::Tolerance{0, 0}));
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kSpatialAttention),
                     Tensor::from_vector({1, 1, 1, 3}, {sig(0.5), sig(2), sig(3.5)}),
                     (test::Tolerance{1e-6, 1e-6}));
  EXPECT_TENSOR_NEAR(r.output,
                     Tensor::from_vector({1, 1, 1, 3}, {sig(0.5), 2 * sig(2), 3 * sig(3.5)}),
                     (test::Tolerance{1e-6, 1e-6}));
}

TEST(Cbam, ShapeContract) {
  const Cbam cbam = random_cbam(CbamOptions(24).mlp_bias(true), 7);
  const Tensor x = test::random_tensor({3, 24, 7, 5}, 1);
  const Attended r = cbam.forward_with_maps(x);
  EXPECT_EQ(r.output.shape(), (Shape{3, 24, 7, 5}));
  EXPECT_EQ(r.maps.at(maps::kChannelAttention).shape(), (Shape{3, 24}));
  EXPECT_EQ(r.maps.at(maps::kSpatialAttention).shape(), (Shape{3, 1, 7, 5}));
  EXPECT_FALSE(r.maps.contains(maps::kAttention));
  EXPECT_EQ(cbam.forward(Tensor::zeros({0, 24, 3, 3})).shape(), (Shape{0, 24, 3, 3}));
  // A 1 x 1 image and a 1-pixel-wide strip work with the 7 x 7 kernel.
  EXPECT_EQ(cbam.forward(test::random_tensor({2, 24, 1, 1}, 2)).shape(), (Shape{2, 24, 1, 1}));
  EXPECT_EQ(cbam.forward(test::random_tensor({1, 24, 9, 1}, 2)).shape(), (Shape{1, 24, 9, 1}));
  EXPECT_EQ(Cbam(CbamOptions(64)).state_dict().keys(),
            (std::vector<std::string>{
                "channel.fc1.weight", "channel.fc2.weight", "spatial.conv.conv.weight",
                "spatial.conv.bn.weight", "spatial.conv.bn.bias", "spatial.conv.bn.running_mean",
                "spatial.conv.bn.running_var", "spatial.conv.bn.num_batches_tracked"}));
  EXPECT_EQ(cbam.describe(),
            "Cbam(channels=24, rd_channels=2, spatial_kernel_size=7, mlp_bias=true, "
            "gate_layer=sigmoid)");
}

TEST(Cbam, OutputIsInputTimesBothGates) {
  const Cbam cbam = random_cbam(CbamOptions(20), 17);
  const Tensor x = test::random_tensor({2, 20, 6, 7}, 3, -3.0f, 3.0f);
  const Attended r = cbam.forward_with_maps(x);
  const Tensor& g = r.maps.at(maps::kChannelAttention);
  const Tensor& s = r.maps.at(maps::kSpatialAttention);
  for (std::int64_t i = 0; i < g.numel(); ++i) ASSERT_TRUE(g[i] > 0.0f && g[i] < 1.0f);
  for (std::int64_t i = 0; i < s.numel(); ++i) ASSERT_TRUE(s[i] > 0.0f && s[i] < 1.0f);
  for (std::int64_t n = 0; n < 2; ++n) {
    for (std::int64_t c = 0; c < 20; ++c) {
      for (std::int64_t p = 0; p < 42; ++p) {
        const std::int64_t off = (n * 20 + c) * 42 + p;
        // Two float multiplies in PyTorch's order: (x * g) * s.
        ASSERT_EQ(r.output[off], (x[off] * g[n * 20 + c]) * s[n * 42 + p]);
      }
    }
  }
}

TEST(Cbam, LargeOutputsTakeTheStreamingPathExactly) {
  // 2 x 64 x 97 x 91 floats = 4.5 MB, over the streaming-store threshold, odd plane size.
  const Cbam cbam = random_cbam(CbamOptions(64), 41);
  const Tensor x = test::random_tensor({2, 64, 97, 91}, 12);
  const std::int64_t hw = 97 * 91;
  for (const int threads : {1, 2}) {
    const test::ThreadScope scope(threads);
    const Attended r = cbam.forward_with_maps(x);
    const Tensor& g = r.maps.at(maps::kChannelAttention);
    const Tensor& s = r.maps.at(maps::kSpatialAttention);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const std::int64_t nc = i / hw, n = nc / 64;
      ASSERT_EQ(r.output[i], (x[i] * g[nc]) * s[n * hw + i % hw]) << i;
    }
  }
}

TEST(Cbam, NanPropagatesWithoutCrashing) {
  const Cbam cbam = random_cbam(CbamOptions(16), 3);
  Tensor x = test::random_tensor({2, 16, 9, 9}, 9);
  x[16 * 81 + 40] = std::nanf("");  // sample 1, channel 0, centre pixel
  const Attended r = cbam.forward_with_maps(x);
  EXPECT_FALSE(std::isnan(r.output[0]));                            // sample 0 untouched
  EXPECT_TRUE(std::isnan(r.maps.at(maps::kChannelAttention)[16]));  // sample 1 poisoned
}

TEST(Cbam, RejectsWrongInput) {
  const Cbam cbam(CbamOptions(64));
  EXPECT_THAT(test::Call([&] {
                (void)cbam.forward(Tensor::zeros({1, 32, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "Cbam::forward: tensor 'x' expected shape [*, 64, *, *], got [1, 32, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)cbam.forward(Tensor::zeros({1, 64, 8, 8, 1}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("got [1, 64, 8, 8, 1]")));
  EXPECT_THAT(test::Call([&] {
                (void)cbam.forward(Tensor::zeros({1, 64, 0, 0}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected H, W >= 1")));
}

TEST(Cbam, RejectsInvalidOptions) {
  EXPECT_THAT(test::Call([] { Cbam c(CbamOptions(64).spatial_kernel_size(6)); }),
              ThrowsMessage<ValueError>(HasSubstr("spatial_kernel_size must be odd")));
  EXPECT_THAT(test::Call([] { Cbam c(CbamOptions(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("channels must be >= 1, got 0")));
  EXPECT_THAT(test::Call([] { Cbam c(CbamOptions(64).rd_ratio(-0.5)); }),
              ThrowsMessage<ValueError>(HasSubstr("rd_ratio must be positive and finite")));
}

TEST(Cbam, LoadingErrorsNameTheKey) {
  const auto fx = test::fixture("channel/cbam_c64_default");
  StateDict d = fx.weights();
  d.erase("spatial.conv.conv.weight");
  EXPECT_THAT(test::Call([&] { (void)CbamOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'spatial.conv.conv.weight'")));
  d.set("spatial.conv.conv.weight", Tensor::zeros({1, 2, 7, 5}));
  EXPECT_THAT(test::Call([&] { (void)CbamOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr("a square kernel), got [1, 2, 7, 5]")));
  d.set("spatial.conv.conv.weight", Tensor::zeros({1, 1, 7, 7}));  // LightCbam's shape
  EXPECT_THAT(test::Call([&] { (void)CbamOptions::from_state_dict(d); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("'spatial.conv.conv.weight' expected [1, 2, *, *], got [1, 1, 7, 7]")));
  // Strict loading: biases present but the module has mlp_bias=false; a kernel size mismatch.
  StateDict biased = test::fixture("channel/cbam_c72_mlp_bias").weights();
  Cbam plain(CbamOptions(72).spatial_kernel_size(3));
  EXPECT_THAT(test::Call([&] { plain.load_state_dict(biased); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "unexpected 'channel.fc1.bias', 'channel.fc2.bias'; 'spatial.conv.conv.weight' "
                  "expected [1, 2, 3, 3], got [1, 2, 7, 7]")));
  // num_batches_tracked is optional.
  StateDict no_count = fx.weights();
  ASSERT_TRUE(no_count.erase("spatial.conv.bn.num_batches_tracked"));
  Cbam cbam(CbamOptions::from_state_dict(no_count));
  cbam.load_state_dict(no_count);
  EXPECT_TENSOR_NEAR(cbam.forward(fx.tensor("input")), fx.tensor("output"), test::Tolerance{});
}

TEST(Cbam, ForwardIsThreadSafe) {
  const Cbam cbam = random_cbam(CbamOptions(48).mlp_bias(true), 21);
  const Tensor x = test::random_tensor({3, 48, 9, 7}, 4);
  test::expect_thread_safe([&] {
    const Attended r = cbam.forward_with_maps(x);
    return std::vector<Tensor>{r.output, r.maps.at(maps::kSpatialAttention)};
  });
}

TEST(Cbam, ThreadCountDoesNotChangeTheResult) {
  const Cbam cbam = random_cbam(CbamOptions(40), 5);
  // 40 x 45 x 47 elements per sample: over the serial cut-off, and 2115 pixels make more than
  // one 1024-pixel block per thread.
  for (const std::int64_t n : {1, 3}) {
    const Tensor x = test::random_tensor({n, 40, 45, 47}, 8);
    test::expect_same_on_one_and_two_threads([&] { return cbam.forward(x); });
  }
}

}  // namespace
}  // namespace cvattn
