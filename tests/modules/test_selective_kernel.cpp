#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/selective_kernel.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

using Kernels = std::vector<std::int64_t>;

StateDict weights(const test::Fixture& fx) {
  return io::load_safetensors(fx.path("weights.safetensors"));
}

// What a user knows besides the weights: the constructor switches and the input's channels.
SelectiveKernelOptions options_for(const test::Fixture& fx, const StateDict& dict) {
  const auto& p = fx.params();
  return SelectiveKernelOptions::from_state_dict(
      dict, p["kernel_size"].get<Kernels>(), p["stride"].get<std::int64_t>(),
      p["dilation"].get<std::int64_t>(), p["split_input"].get<bool>(), p["keep_3x3"].get<bool>(),
      p["in_channels"].get<std::int64_t>());
}

// A module with every parameter set to a deterministic pseudo-random value (running variances
// kept positive).
SelectiveKernel random_sk(const SelectiveKernelOptions& o, std::uint64_t seed) {
  SelectiveKernel sk(o);
  const StateDict current = sk.state_dict();
  StateDict filled;
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = test::random_tensor(e.value.shape(), seed++);
    if (e.key.find("running_var") != std::string::npos) {
      for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = 1.0f + 0.5f * t[i];
    }
    filled.set(e.key, t);
  }
  sk.load_state_dict(filled);
  return sk;
}

TEST(SelectiveKernel, MatchesTimm) {
  const auto cases = test::fixtures_in("sk");
  ASSERT_GE(cases.size(), 21u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const StateDict dict = weights(fx);
    const SelectiveKernelOptions o = options_for(fx, dict);
    EXPECT_EQ(o.in_channels(), p["in_channels"].get<std::int64_t>());
    EXPECT_EQ(o.resolved_out_channels(), p["out_channels"].get<std::int64_t>());
    EXPECT_EQ(o.conv_groups(), p["groups"].get<std::int64_t>());
    EXPECT_EQ(o.attn_channels(), p["rd_channels"].get<std::int64_t>());
    ASSERT_EQ(o.num_paths(), p["num_paths"].get<std::int64_t>());
    const auto paths = o.paths();
    for (std::size_t i = 0; i < paths.size(); ++i) {
      EXPECT_EQ(paths[i].kernel_size, p["path_kernel"][i].get<std::int64_t>());
      EXPECT_EQ(paths[i].dilation, p["path_dilation"][i].get<std::int64_t>());
      EXPECT_EQ(paths[i].padding, p["path_padding"][i].get<std::int64_t>());
    }
    SelectiveKernel sk(o);
    sk.load_state_dict(dict);
    const Tensor x = fx.tensor("input");
    const Attended r = sk.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(sk.forward(x), r.output, (test::Tolerance{0, 0}));
  }
}

// The paths' convs keep their Winograd transforms (made on the first forward, also for the
// dilated paths, which conv2d runs as sub-images): weights loaded again must replace them. Each
// module runs first with other weights, then must match timm with the fixture's.
TEST(SelectiveKernel, WeightsLoadedAgainReplaceThePreparedConvs) {
  int polyphase = 0;
  for (const auto& fx : test::fixtures_in("sk")) {
    SCOPED_TRACE(fx.name());
    const StateDict dict = weights(fx);
    const SelectiveKernelOptions o = options_for(fx, dict);
    SelectiveKernel sk = random_sk(o, 77);
    const Tensor x = fx.tensor("input");
    (void)sk.forward(x);
    sk.load_state_dict(dict);
    EXPECT_TENSOR_NEAR(sk.forward(x), fx.tensor("output"), test::Tolerance{});
    polyphase += fx.name().rfind("polyphase", 0) == 0 ? 1 : 0;
  }
  EXPECT_GE(polyphase, 3);
}

TEST(SelectiveKernel, StateDictKeysAreTimms) {
  const auto fx = test::fixture("sk/paths3_keep3x3");
  const StateDict dict = weights(fx);
  const SelectiveKernel sk(options_for(fx, dict));
  std::vector<std::string> ours = sk.state_dict().keys();
  std::vector<std::string> theirs = dict.keys();
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(ours, theirs);
  // timm's registration order: paths first, then the attention.
  const auto keys = sk.state_dict().keys();
  EXPECT_EQ(keys.front(), "paths.0.conv.weight");
  EXPECT_EQ(keys.back(), "attn.fc_select.weight");
}

TEST(SelectiveKernel, OldTimmAttentionWidthComesFromTheWeights) {
  // timm <= 0.4.9: A = max(64 / 16, 32) = 32 where the current rule gives 8.
  const auto fx = test::fixture("sk/old_timm_a32");
  const StateDict dict = weights(fx);
  const auto o = options_for(fx, dict);
  EXPECT_EQ(o.attn_channels(), 32);
  EXPECT_EQ(SelectiveKernelOptions(8).out_channels(64).attn_channels(), 8);
  SelectiveKernel sk(o);
  sk.load_state_dict(dict);
  EXPECT_TENSOR_NEAR(sk.forward(fx.tensor("input")), fx.tensor("output"), test::Tolerance{});
}

TEST(SelectiveKernel, WithoutInChannelsGroupsIsOne) {
  const auto fx = test::fixture("sk/default_c16");
  const auto o = SelectiveKernelOptions::from_state_dict(weights(fx));
  EXPECT_EQ(o.in_channels(), 16);  // 2 paths x 8 channels each
  EXPECT_EQ(o.conv_groups(), 1);
  EXPECT_EQ(o.resolved_out_channels(), 16);
  // The same weights with 32 input channels mean two groups of 8 per path.
  const auto g = SelectiveKernelOptions::from_state_dict(weights(fx), {3, 5}, 1, 1, true, true, 32);
  EXPECT_EQ(g.conv_groups(), 2);
}

TEST(SelectiveKernel, DerivedConfigurationFollowsTimm) {
  // keep_3x3: kernel k becomes a 3x3 with dilation (dilation * (k - 1)) // 2.
  auto paths = SelectiveKernelOptions(12).kernel_size({3, 5, 7}).paths();
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[2].kernel_size, 3);
  EXPECT_EQ(paths[2].dilation, 3);
  EXPECT_EQ(paths[2].padding, 3);
  paths = SelectiveKernelOptions(12).kernel_size({3, 5, 7}).keep_3x3(false).paths();
  EXPECT_EQ(paths[1].kernel_size, 5);
  EXPECT_EQ(paths[1].dilation, 1);
  EXPECT_EQ(paths[1].padding, 2);
  // Padding ((stride - 1) + dilation * (k - 1)) // 2 (docs/modules.md §1.2).
  paths = SelectiveKernelOptions(8).stride(2).dilation(2).paths();
  EXPECT_EQ(paths[0].dilation, 2);
  EXPECT_EQ(paths[0].padding, 2);  // (1 + 4) // 2
  EXPECT_EQ(paths[1].dilation, 4);
  EXPECT_EQ(paths[1].padding, 4);  // (1 + 8) // 2
  // Attention width: the SK column of docs/modules.md §1.1.
  for (const auto& [c, a] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {16, 8}, {64, 8}, {128, 8}, {192, 16}, {256, 16}, {320, 24}, {512, 32}, {2048, 128}}) {
    EXPECT_EQ(SelectiveKernelOptions(c).attn_channels(), a) << c;
  }
  // skresnet18/34: rd_ratio 1/8, rd_divisor 16.
  EXPECT_EQ(SelectiveKernelOptions(64).rd_ratio(1.0 / 8).rd_divisor(16).attn_channels(), 16);
  // groups is clamped to Cout.
  EXPECT_EQ(SelectiveKernelOptions(16).out_channels(4).groups(8).conv_groups(), 4);
  EXPECT_EQ(SelectiveKernelOptions(16).split_input(true).path_in_channels(), 8);
  EXPECT_EQ(SelectiveKernelOptions(16).split_input(false).path_in_channels(), 16);
}

TEST(SelectiveKernel, ShapeContract) {
  // N > 1, odd H != W, stride 2, three paths, Cin != Cout.
  const auto o = SelectiveKernelOptions(9).out_channels(6).kernel_size({3, 5, 7}).stride(2);
  const SelectiveKernel sk = random_sk(o, 11);
  const Attended r = sk.forward_with_maps(test::random_tensor({3, 9, 7, 5}, 5));
  EXPECT_THAT(r.output.shape(), ElementsAre(3, 6, 4, 3));
  EXPECT_THAT(r.maps.at(maps::kAttention).shape(), ElementsAre(3, 3, 6));
  // A 1x1 input still works with the widest dilation (padding keeps the output 1x1).
  const SelectiveKernel wide = random_sk(SelectiveKernelOptions(4).kernel_size({3, 9}), 3);
  EXPECT_THAT(wide.forward(test::random_tensor({2, 4, 1, 1}, 1)).shape(), ElementsAre(2, 4, 1, 1));
  // An empty batch gives an empty output, as in PyTorch.
  const Attended e = sk.forward_with_maps(Tensor::zeros({0, 9, 7, 5}));
  EXPECT_THAT(e.output.shape(), ElementsAre(0, 6, 4, 3));
  EXPECT_THAT(e.maps.at(maps::kAttention).shape(), ElementsAre(0, 3, 6));
}

TEST(SelectiveKernel, AttentionIsASoftmaxOverPaths) {
  for (const Kernels& ks : {Kernels{3, 5}, Kernels{3, 5, 7}, Kernels{3, 3, 5, 7}}) {
    const auto o = SelectiveKernelOptions(static_cast<std::int64_t>(ks.size()) * 4)
                       .out_channels(8)
                       .kernel_size(ks);
    const SelectiveKernel sk = random_sk(o, 100 + ks.size());
    const Tensor w = sk.forward_with_maps(test::random_tensor({2, o.in_channels(), 9, 8}, 7))
                         .maps.at(maps::kAttention);
    const std::int64_t paths = static_cast<std::int64_t>(ks.size());
    for (std::int64_t n = 0; n < 2; ++n) {
      for (std::int64_t c = 0; c < 8; ++c) {
        double sum = 0;
        for (std::int64_t p = 0; p < paths; ++p) {
          const float v = w[(n * paths + p) * 8 + c];
          EXPECT_GE(v, 0.0f);
          EXPECT_LE(v, 1.0f);
          sum += v;
        }
        EXPECT_NEAR(sum, 1.0, 1e-6) << "n " << n << " c " << c;
      }
    }
  }
}

// Two single-channel paths that are identities times 1 and 2 (their centre taps), identity
// BatchNorms (running_var = 1 - eps), and an attention whose logits are 0 and ln 3: the weights are
// 1/4 and 3/4, so y = relu(x0) / 4 + 3 * relu(2 * x1) / 4.
TEST(SelectiveKernel, HandCheckedExample) {
  const auto o = SelectiveKernelOptions(2).out_channels(1).rd_channels(2);  // split: 1 ch per path
  SelectiveKernel sk(o);
  StateDict d = sk.state_dict();
  StateDict w;
  for (const auto& e : d.entries()) w.set(e.key, e.value.clone(), e.integer);
  Tensor k0 = Tensor::zeros({1, 1, 3, 3});
  k0[4] = 1.0f;
  Tensor k1 = Tensor::zeros({1, 1, 3, 3});
  k1[4] = 2.0f;
  w.set("paths.0.conv.weight", k0);
  w.set("paths.1.conv.weight", k1);
  // running_var + eps = 1, so the path BatchNorms are exact identities.
  w.set("paths.0.bn.running_var", Tensor::full({1}, 1.0f - 1e-5f));
  w.set("paths.1.bn.running_var", Tensor::full({1}, 1.0f - 1e-5f));
  w.set("attn.bn.bias", Tensor::full({2}, 1.0f));  // z = relu(0 + 1) = 1 for both channels
  const float half_ln3 = static_cast<float>(std::log(3.0) / 2);
  w.set("attn.fc_select.weight", Tensor::from_vector({2, 2, 1, 1}, {0, 0, half_ln3, half_ln3}));
  sk.load_state_dict(w);
  const Tensor x = Tensor::from_vector({1, 2, 2, 2}, {1, -2, 3, 0.5f,     // channel 0 -> path 0
                                                      -1, 4, 0.25f, 2});  // channel 1 -> path 1
  const Attended r = sk.forward_with_maps(x);
  EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), Tensor::from_vector({1, 2, 1}, {0.25f, 0.75f}),
                     (test::Tolerance{1e-7, 1e-6}));
  // 0.25 * relu(x0) + 0.75 * relu(2 * x1)
  EXPECT_TENSOR_NEAR(r.output,
                     Tensor::from_vector({1, 1, 2, 2}, {0.25f, 6.0f, 0.75f + 0.375f, 3.125f}),
                     (test::Tolerance{1e-6, 1e-6}));
}

// With fc_select zero every path gets weight 1/P, and BatchNorm folding must reproduce
// (conv(x) - mean) / sqrt(var + eps) * gamma + beta.
TEST(SelectiveKernel, FoldsBatchNormIntoThePaths) {
  const auto o = SelectiveKernelOptions(1).out_channels(1).kernel_size({3}).split_input(false);
  SelectiveKernel sk(o);
  const StateDict d = sk.state_dict();
  StateDict w;
  for (const auto& e : d.entries()) w.set(e.key, e.value.clone(), e.integer);
  Tensor k = Tensor::zeros({1, 1, 3, 3});
  k[4] = 1.0f;
  w.set("paths.0.conv.weight", k);
  w.set("paths.0.bn.weight", Tensor::full({1}, 2.0f));
  w.set("paths.0.bn.bias", Tensor::full({1}, 0.5f));
  w.set("paths.0.bn.running_mean", Tensor::full({1}, 1.0f));
  w.set("paths.0.bn.running_var", Tensor::full({1}, 4.0f - 1e-5f));
  sk.load_state_dict(w);
  const Tensor x = Tensor::from_vector({1, 1, 1, 3}, {3, 0, -1});
  // (x - 1) / 2 * 2 + 0.5 = x - 0.5, then ReLU; one path, weight 1.
  EXPECT_TENSOR_NEAR(sk.forward(x), Tensor::from_vector({1, 1, 1, 3}, {2.5f, 0, 0}),
                     (test::Tolerance{1e-6, 1e-6}));
}

TEST(SelectiveKernel, NonFiniteInputDoesNotCrash) {
  const SelectiveKernel sk = random_sk(SelectiveKernelOptions(4).out_channels(4), 9);
  Tensor x = test::random_tensor({2, 4, 6, 5}, 3);
  x[7] = std::numeric_limits<float>::quiet_NaN();  // sample 0 only
  x[4 * 30 + 3] = std::numeric_limits<float>::infinity();
  const Attended r = sk.forward_with_maps(x);
  EXPECT_EQ(r.output.numel(), 2 * 4 * 6 * 5);
}

TEST(SelectiveKernel, RejectsBadOptions) {
  auto throws = [](const SelectiveKernelOptions& o, const std::string& msg) {
    EXPECT_THAT(test::Call([&] { SelectiveKernel sk(o); }),
                ThrowsMessage<ValueError>(HasSubstr(msg)))
        << msg;
  };
  throws(SelectiveKernelOptions(8).kernel_size({3, 4}),
         "SelectiveKernelOptions: kernel_size entries must be odd and in [3, 2^15], got [3, 4]");
  throws(SelectiveKernelOptions(8).kernel_size({1, 3}), "must be odd and in [3, 2^15]");
  throws(SelectiveKernelOptions(8).kernel_size({}), "kernel_size needs one entry per path");
  throws(SelectiveKernelOptions(9),
         "split_input needs in_channels (9) divisible by the number "
         "of paths (2)");
  throws(SelectiveKernelOptions(8).groups(3),
         "groups (3) must divide the input channels per path (4) and out_channels (8)");
  throws(SelectiveKernelOptions(8).groups(0), "groups must be >= 1, got 0");
  throws(SelectiveKernelOptions(8).stride(0), "stride must be in [1, 2^20], got 0");
  throws(SelectiveKernelOptions(8).dilation(-1), "dilation must be in [1, 2^20], got -1");
  throws(SelectiveKernelOptions(0), "in_channels must be in [1, 2^31), got 0");
  throws(SelectiveKernelOptions(8).out_channels(-2), "out_channels must be in [0, 2^31)");
  throws(SelectiveKernelOptions(8).rd_ratio(0.0), "rd_ratio must be positive and finite, got 0");
  throws(SelectiveKernelOptions(8).rd_ratio(std::nan("")), "rd_ratio must be positive");
  throws(SelectiveKernelOptions(8).rd_channels(-1), "rd_channels must be in [0, 2^31)");
}

TEST(SelectiveKernel, FromStateDictExplainsInconsistentWeights) {
  const auto fx = test::fixture("sk/default_c16");
  const StateDict dict = weights(fx);
  using O = SelectiveKernelOptions;
  EXPECT_THAT(test::Call([&] { (void)O::from_state_dict(StateDict{}); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "SelectiveKernelOptions::from_state_dict: missing 'paths.0.conv.weight'")));
  EXPECT_THAT(test::Call([&] {
                (void)O::from_state_dict(dict, {3, 5, 7});
              }),
              ThrowsMessage<ValueError>(
                  HasSubstr("kernel_size [3, 5, 7] gives 3 path(s), but the state_dict has 2 "
                            "(paths.0.conv.weight .. paths.1.conv.weight)")));
  EXPECT_THAT(test::Call([&] {
                (void)O::from_state_dict(dict, {3, 5}, 1, 1, true, false);
              }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "'paths.1.conv.weight' expected [16, 8, 5, 5] (kernel_size[1] = 5, keep_3x3 = "
                  "false), got [16, 8, 3, 3]")));
  EXPECT_THAT(test::Call([&] {
                (void)O::from_state_dict(dict, {3, 5}, 1, 1, true, true, 20);
              }),
              ThrowsMessage<ValueError>(
                  HasSubstr("has 8 input channels per group, which must divide the 10 input "
                            "channels of each path (in_channels 20, split_input = true)")));
  EXPECT_THAT(test::Call([&] {
                (void)O::from_state_dict(dict, {3, 5}, 1, 1, true, true, 15);
              }),
              ThrowsMessage<ValueError>(HasSubstr("split_input needs in_channels (15)")));
  StateDict no_attn = dict;
  no_attn.erase("attn.fc_reduce.weight");
  EXPECT_THAT(test::Call([&] { (void)O::from_state_dict(no_attn); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'attn.fc_reduce.weight'")));
  StateDict bad_reduce = dict;
  bad_reduce.set("attn.fc_reduce.weight", Tensor::zeros({8, 12, 1, 1}));
  EXPECT_THAT(test::Call([&] { (void)O::from_state_dict(bad_reduce); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("'attn.fc_reduce.weight' expected [*, 16, 1, 1], got [8, 12, 1, 1]")));
}

TEST(SelectiveKernel, LoadStateDictNamesTheKey) {
  const auto fx = test::fixture("sk/default_c16");
  StateDict dict = weights(fx);
  SelectiveKernel sk(options_for(fx, dict));
  dict.set("attn.fc_select.weight", Tensor::zeros({16, 8, 1, 1}));
  EXPECT_THAT(test::Call([&] { sk.load_state_dict(dict); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("'attn.fc_select.weight' expected [32, 8, 1, 1], got [16, 8, 1, 1]")));
  dict = weights(fx);
  dict.erase("paths.1.bn.running_var");
  dict.erase("paths.0.bn.num_batches_tracked");  // optional
  EXPECT_THAT(test::Call([&] { sk.load_state_dict(dict); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'paths.1.bn.running_var'")));
}

TEST(SelectiveKernel, RejectsBadInput) {
  const SelectiveKernel sk(SelectiveKernelOptions(8));
  EXPECT_THAT(test::Call([&] {
                (void)sk.forward(Tensor::zeros({1, 6, 5, 5}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("SelectiveKernel::forward: tensor 'x' expected shape [*, 8, *, *], got "
                            "[1, 6, 5, 5]")));
  EXPECT_THAT(test::Call([&] {
                (void)sk.forward(Tensor::zeros({8, 5, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("SelectiveKernel::forward")));
  EXPECT_THAT(test::Call([&] {
                (void)sk.forward(Tensor::zeros({1, 8, 0, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected H, W >= 1, got [1, 8, 0, 5]")));
  EXPECT_THAT(test::Call([&] { (void)sk.forward(Tensor()); }),
              ThrowsMessage<ShapeError>(HasSubstr("'x'")));
}

TEST(SelectiveKernel, ForwardIsThreadSafe) {
  const auto fx = test::fixture("sk/dilation2_stride2_paths3");
  const StateDict dict = weights(fx);
  SelectiveKernel sk(options_for(fx, dict));
  sk.load_state_dict(dict);
  const Tensor x = fx.tensor("input");
  const Attended serial = sk.forward_with_maps(x);
  std::vector<Attended> results(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) results[t] = sk.forward_with_maps(x);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    EXPECT_TENSOR_NEAR(r.output, serial.output, (test::Tolerance{0, 0}));
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), serial.maps.at(maps::kAttention),
                       (test::Tolerance{0, 0}));
  }
  EXPECT_TENSOR_NEAR(serial.output, fx.tensor("output"), test::Tolerance{});
}

TEST(SelectiveKernel, ThreadCountDoesNotChangeTheResult) {
  const SelectiveKernel sk = random_sk(SelectiveKernelOptions(32), 21);
  const int before = num_threads();
  for (const std::int64_t n : {1, 3}) {
    const Tensor x = test::random_tensor({n, 32, 17, 15}, 4);
    set_num_threads(1);
    const Tensor one = sk.forward(x);
    set_num_threads(2);
    const Tensor two = sk.forward(x);
    // Not bit for bit: with two threads the Winograd GEMMs get narrower column blocks, and
    // Eigen's kernels then round a few results differently (a few ulp).
    EXPECT_TENSOR_NEAR(one, two, (test::Tolerance{1e-5, 1e-5})) << n;
  }
  set_num_threads(before);
}

TEST(SelectiveKernel, DescribeAndMove) {
  SelectiveKernel sk =
      random_sk(SelectiveKernelOptions(16).kernel_size({3, 5, 7}).split_input(false), 2);
  EXPECT_EQ(sk.describe(),
            "SelectiveKernel(in_channels=16, out_channels=16, kernel_size=[3, 5, 7], stride=1, "
            "dilation=1, groups=1, attn_channels=8, keep_3x3=true, split_input=false)");
  const Tensor x = test::random_tensor({1, 16, 6, 6}, 8);
  const Tensor before = sk.forward(x);
  const SelectiveKernel moved = std::move(sk);
  EXPECT_TENSOR_NEAR(moved.forward(x), before, (test::Tolerance{0, 0}));
}

}  // namespace
}  // namespace cvattn
