#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/conv.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/reference/winograd_kernels.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/naive_conv.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using test::naive_conv2d;
using test::pair;
using test::ThreadScope;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};
constexpr test::Tolerance kExact{0, 0};

// The conv2d options a fixture was made with.
F::Conv2dOptions options_of(const test::Fixture& fx) {
  const auto& p = fx.params();
  return F::Conv2dOptions()
      .stride(pair(p["stride"]))
      .padding(pair(p["padding"]))
      .dilation(pair(p["dilation"]))
      .groups(p["groups"].get<std::int64_t>());
}

TEST(Conv2d, MatchesPyTorch) {
  int cases = 0;
  for (const auto& fx : test::fixtures_in("functional")) {
    if (fx.name().rfind("conv2d_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    const auto options = options_of(fx);
    const Tensor bias = fx.params()["bias"].get<bool>() ? fx.tensor("bias") : Tensor();
    for (int threads : {1, 2}) {
      ThreadScope scope(threads);
      const Tensor y = F::conv2d(fx.tensor("input"), fx.tensor("weight"), bias, options);
      EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol) << "threads " << threads;
    }
    ++cases;
  }
  EXPECT_GE(cases, 35) << "fixtures missing: run tests/fixtures/functional.py";
}

struct RandomCase {
  Shape input;
  Shape weight;
  Pair2 stride, padding, dilation;
  std::int64_t groups;
  bool bias;
};

TEST(Conv2d, MatchesDirectEvaluationOnLargerShapes) {
  // Sizes that split the im2col and Winograd paths into many chunks (K = 576 and 2304), wide
  // rows, N > 1, and the fast paths at sizes where every thread gets work.
  const std::vector<RandomCase> cases = {
      {{1, 64, 23, 29}, {16, 64, 3, 3}, 1, 1, 1, 1, true},
      {{2, 256, 9, 13}, {8, 256, 3, 3}, 1, 1, 1, 1, false},
      {{1, 32, 5, 300}, {4, 32, 3, 3}, {1, 2}, {1, 0}, 1, 1, true},
      {{3, 16, 17, 15}, {24, 4, 3, 3}, 2, 1, 1, 4, true},
      {{1, 24, 31, 33}, {24, 1, 5, 5}, 1, 2, 1, 24, true},
      // Depthwise 5x5 and strided 3x3 rows (MobileNet / EfficientNet): stride 2 in W reads the
      // plane split into even and odd columns; odd sizes, multiplier 2, asymmetric stride.
      {{2, 12, 23, 17}, {12, 1, 5, 5}, 2, 2, 1, 12, true},
      {{1, 5, 9, 10}, {5, 1, 5, 5}, {2, 1}, {2, 1}, 1, 5, false},
      {{1, 6, 14, 15}, {12, 1, 3, 3}, {1, 2}, 1, 1, 6, false},
      {{2, 7, 1, 2}, {7, 1, 5, 5}, 2, 2, 1, 7, true},
      {{2, 32, 19, 21}, {48, 32, 1, 1}, 1, 0, 1, 1, true},
      {{1, 8, 64, 64}, {8, 8, 3, 3}, 1, 4, 4, 1, true},
      // Dilated 3x3 as sub-images (conv_polyphase): 56 columns at d = 2 (28 groups a row), N > 1;
      // d = 3 with ragged rows and columns and groups.
      {{2, 16, 30, 56}, {24, 16, 3, 3}, 1, 2, 2, 1, true},
      {{1, 24, 25, 31}, {16, 12, 3, 3}, 1, 3, 3, 2, false},
      // One input row, fewer than d: row phase 1 is empty.
      {{1, 8, 1, 120}, {8, 8, 3, 3}, 1, 2, 2, 1, true},
      // Winograd: several chunks of tile rows, odd sizes, groups, asymmetric padding.
      {{2, 16, 37, 45}, {24, 16, 3, 3}, 1, 1, 1, 1, true},
      {{1, 32, 30, 21}, {16, 8, 3, 3}, 1, {0, 2}, 1, 4, false},
      // Winograd F(4x4) with each row of 14 tiles stored in 16 (conv_winograd.cpp).
      {{1, 24, 56, 56}, {16, 24, 3, 3}, 1, 1, 1, 1, true},
  };
  std::uint64_t seed = 100;
  for (const auto& c : cases) {
    SCOPED_TRACE(to_string(c.input) + " * " + to_string(c.weight));
    const Tensor x = test::random_tensor(c.input, seed++);
    const Tensor w = test::random_tensor(c.weight, seed++, -0.2f, 0.2f);
    const Tensor b = c.bias ? test::random_tensor({c.weight[0]}, seed++) : Tensor();
    const Tensor expected = naive_conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    for (int threads : {1, 2, 3}) {
      ThreadScope scope(threads);
      const auto options = F::Conv2dOptions()
                               .stride(c.stride)
                               .padding(c.padding)
                               .dilation(c.dilation)
                               .groups(c.groups);
      EXPECT_TENSOR_NEAR(F::conv2d(x, w, b, options), expected, kTol) << "threads " << threads;
    }
  }
}

// Winograd F(4x4, 3x3) is taken while max |x| * winograd_weight_scale <= kWinograd43Bound: at
// 0.97 of the bound it must still meet the 1e-4 bar against the direct sum in double (and
// past it, on F(2x2, 3x3)); shapes with several chunks, groups, padding 0 and 2, N > 1, wide
// channels, and 1-3 threads.
TEST(Conv2d, Winograd4x4StaysAccurateUpToItsBound) {
  const std::vector<RandomCase> cases = {
      {{1, 64, 29, 35}, {48, 64, 3, 3}, 1, 1, 1, 1, true},
      {{2, 16, 23, 18}, {24, 8, 3, 3}, 1, 1, 1, 2, true},
      {{1, 256, 20, 20}, {16, 256, 3, 3}, 1, 0, 1, 1, false},
      {{1, 32, 17, 42}, {8, 32, 3, 3}, 1, 2, 1, 1, true},
  };
  std::uint64_t seed = 300;
  for (const auto& c : cases) {
    for (const float share : {0.97f, 1.5f}) {
      SCOPED_TRACE(to_string(c.input) + " * " + to_string(c.weight) + " at " +
                   std::to_string(share) + " of the bound");
      const std::int64_t fan_in = c.weight[1] * 9;
      const float k = 1.0f / std::sqrt(static_cast<float>(fan_in));
      const Tensor w = test::random_tensor(c.weight, seed++, -k, k);
      Tensor x = test::random_tensor(c.input, seed++);
      F::detail::ConvGeometry g{};
      g.cout = c.weight[0], g.cin_g = c.weight[1];
      const float scale = F::detail::winograd_weight_scale(g, w.data());
      const float top = cvattn::reference::winograd_max_abs(x.data(), x.numel());
      const float factor = share * F::detail::kWinograd43Bound / (scale * top);
      for (std::int64_t i = 0; i < x.numel(); ++i) x[i] *= factor;
      const Tensor b = c.bias ? test::random_tensor({c.weight[0]}, seed++) : Tensor();
      const Tensor expected = naive_conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      const auto options = F::Conv2dOptions().padding(c.padding).groups(c.groups);
      for (int threads : {1, 2, 3}) {
        ThreadScope scope(threads);
        EXPECT_TENSOR_NEAR(F::conv2d(x, w, b, options), expected, kTol) << "threads " << threads;
      }
    }
  }
}

// The bound is checked as each task copies its input rows: one value past it, in the last rows
// only, must send every task to F(2x2, 3x3), also the tasks that finished F(4x4, 3x3) before.
// The first output rows, far from that value, then differ from the F(4x4) ones of the same
// input without it, and the whole output meets the bar against the direct sum.
TEST(Conv2d, Winograd4x4BoundBrokenInOneTaskFallsBackEverywhere) {
  const Shape input{1, 144, 40, 56}, weight{16, 144, 3, 3};  // two runs of tile rows
  const float k = 1.0f / std::sqrt(144.0f * 9.0f);
  const Tensor w = test::random_tensor(weight, 320, -k, k);
  const Tensor b = test::random_tensor({16}, 321);
  const Tensor clean = test::random_tensor(input, 322);
  F::detail::ConvGeometry g{};
  g.cout = 16, g.cin_g = 144;
  const float limit = F::detail::kWinograd43Bound / F::detail::winograd_weight_scale(g, w.data());
  ASSERT_LT(cvattn::reference::winograd_max_abs(clean.data(), clean.numel()), 0.5f * limit);
  Tensor outlier = clean.clone();
  outlier.data()[outlier.numel() - 1] = 2.0f * limit;  // last channel, row and column
  const auto options = F::Conv2dOptions().padding(1);
  const Tensor expected = naive_conv2d(outlier, w, b, 1, 1, 1, 1);
  for (int threads : {1, 2, 3}) {
    ThreadScope scope(threads);
    const Tensor f43 = F::conv2d(clean, w, b, options);
    const Tensor got = F::conv2d(outlier, w, b, options);
    EXPECT_TENSOR_NEAR(got, expected, kTol) << "threads " << threads;
    std::int64_t differ = 0;  // over output rows 0-15, the first run's, of every channel
    for (std::int64_t i = 0; i < 16 * 40 * 56; ++i) {
      if ((i / 56) % 40 < 16) differ += got.data()[i] != f43.data()[i] ? 1 : 0;
    }
    EXPECT_GT(differ, 0) << "threads " << threads << ": the first rows kept F(4x4, 3x3)";
  }
}

TEST(Conv2d, OnesKernelCountsNeighbours) {
  // 3x3 ones over a 3x3 ones image with padding 1: corners see 4 pixels, edges 6, centre 9.
  const Tensor x = Tensor::full({1, 1, 3, 3}, 1.0f);
  const Tensor w = Tensor::full({1, 1, 3, 3}, 1.0f);
  const Tensor y = F::conv2d(x, w, Tensor::from_vector({1}, {0.5f}), F::Conv2dOptions().padding(1));
  EXPECT_TENSOR_NEAR(
      y, Tensor::from_vector({1, 1, 3, 3}, {4.5f, 6.5f, 4.5f, 6.5f, 9.5f, 6.5f, 4.5f, 6.5f, 4.5f}),
      kExact);
}

TEST(Conv2d, IsCrossCorrelationNotConvolution) {
  // A kernel with a single 1 at (0, 0) shifts the image down-right by one pixel (no flip).
  const Tensor x = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = Tensor::zeros({1, 1, 3, 3});
  w[0] = 1.0f;
  const Tensor y = F::conv2d(x, w, {}, F::Conv2dOptions().padding(1));
  EXPECT_TENSOR_NEAR(y, Tensor::from_vector({1, 1, 2, 2}, {0, 0, 0, 1}), kExact);
}

TEST(Conv2d, UnbatchedInputKeepsRank3) {
  const Tensor x = test::random_tensor({3, 5, 6}, 7);
  const Tensor w = test::random_tensor({2, 3, 3, 3}, 8);
  const Tensor y = F::conv2d(x, w);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
}

TEST(Conv2d, EmptyBatchGivesEmptyOutput) {
  const Tensor y = F::conv2d(Tensor::zeros({0, 3, 8, 8}), Tensor::zeros({4, 3, 3, 3}));
  EXPECT_EQ(y.shape(), (Shape{0, 4, 6, 6}));
}

TEST(Conv2d, RejectsWrongChannelCount) {
  const Tensor x = Tensor::zeros({1, 4, 8, 8});
  const Tensor w = Tensor::zeros({6, 3, 3, 3});
  EXPECT_THAT(test::Call([&] { (void)F::conv2d(x, w); }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "conv2d: tensor 'input' expected 3 channels (weight [6, 3, 3, 3] with groups "
                  "1), got [1, 4, 8, 8]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(x, Tensor::zeros({6, 1, 3, 3}), {}, F::Conv2dOptions().groups(2));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected 2 channels")));
}

TEST(Conv2d, RejectsGroupsNotDividingChannels) {
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(Tensor::zeros({1, 4, 8, 8}), Tensor::zeros({6, 1, 3, 3}), {},
                                F::Conv2dOptions().groups(4));
              }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "conv2d: groups (4) must divide the output channels of 'weight' [6, 1, 3, 3]")));
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(Tensor::zeros({1, 4, 8, 8}), Tensor::zeros({4, 4, 3, 3}), {},
                                F::Conv2dOptions().groups(0));
              }),
              ThrowsMessage<ValueError>(HasSubstr("conv2d: groups must be positive, got 0")));
}

TEST(Conv2d, RejectsKernelLargerThanPaddedInput) {
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(Tensor::zeros({1, 2, 4, 9}), Tensor::zeros({3, 2, 5, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "conv2d: kernel (5, 3) with dilation (1, 1) spans (5, 3), larger than the padded "
                  "input (4, 9)")));
  EXPECT_THAT(
      test::Call([&] {
        (void)F::conv2d(Tensor::zeros({1, 2, 6, 6}), Tensor::zeros({3, 2, 3, 3}), {},
                        F::Conv2dOptions().dilation(3));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("spans (7, 7), larger than the padded input (6, 6)")));
}

TEST(Conv2d, RejectsBadBiasShape) {
  EXPECT_THAT(
      test::Call([&] {
        (void)F::conv2d(Tensor::zeros({1, 2, 6, 6}), Tensor::zeros({3, 2, 3, 3}),
                        Tensor::zeros({4}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("conv2d: tensor 'bias' expected shape [3], got [4]")));
}

TEST(Conv2d, RejectsBadOptionsAndRanks) {
  const Tensor x = Tensor::zeros({1, 2, 6, 6});
  const Tensor w = Tensor::zeros({3, 2, 3, 3});
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(x, w, {}, F::Conv2dOptions().stride({1, 0}));
              }),
              ThrowsMessage<ValueError>(HasSubstr("conv2d: stride must be positive, got (1, 0)")));
  EXPECT_THAT(
      test::Call([&] { (void)F::conv2d(x, w, {}, F::Conv2dOptions().padding(-1)); }),
      ThrowsMessage<ValueError>(HasSubstr("conv2d: padding must be non-negative, got (-1, -1)")));
  EXPECT_THAT(test::Call([&] { (void)F::conv2d(x, w, {}, F::Conv2dOptions().dilation(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("conv2d: dilation must be positive")));
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(x, w, {}, F::Conv2dOptions().padding(std::int64_t{1} << 40));
              }),
              ThrowsMessage<ValueError>(HasSubstr("conv2d: padding must be at most")));
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(Tensor::zeros({2, 6, 6}).reshape({72}), w);
              }),
              ThrowsMessage<ShapeError>(HasSubstr("conv2d: tensor 'input' expected rank 4")));
  EXPECT_THAT(test::Call([&] {
                (void)F::conv2d(x, Tensor::zeros({3, 2, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("conv2d: tensor 'weight' expected rank 4")));
  EXPECT_THAT(test::Call([&] { (void)F::conv2d(Tensor(), w); }),
              ThrowsMessage<ShapeError>(HasSubstr("conv2d: tensor 'input' is undefined")));
}

TEST(Conv2d, HugePaddingAndDilationFailCleanly) {
  // The output is 1x1, but the zero-padded plane of the depthwise path would have ~2^64
  // elements: a ValueError, never an overflowed allocation.
  constexpr std::int64_t kBig = std::int64_t{1} << 31;
  const auto options = F::Conv2dOptions().padding(kBig).dilation(kBig);
  EXPECT_THAT(
      test::Call([&] {
        (void)F::conv2d(Tensor::zeros({1, 1, 1, 1}), Tensor::zeros({1, 1, 3, 3}), {}, options);
      }),
      ThrowsMessage<ValueError>(HasSubstr("conv2d: shape")));
  // The im2col path only gathers taps: the centre one (offset -p + 1*d = 0) reads the pixel.
  const Tensor y = F::conv2d(Tensor::full({1, 2, 1, 1}, 1.0f), Tensor::full({1, 2, 3, 3}, 1.0f),
                             Tensor::from_vector({1}, {0.5f}), options);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(y[0], 2.5f);
}

// Conv2dWeight: the Winograd transform prepared once gives conv2d's own values, bit for bit.
TEST(Conv2d, PreparedWeightMatchesPyTorchAndTheUnpreparedCall) {
  int cases = 0, prepared = 0;
  for (const auto& fx : test::fixtures_in("functional")) {
    if (fx.name().rfind("conv2d_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    const auto options = options_of(fx);
    const Tensor bias = fx.params()["bias"].get<bool>() ? fx.tensor("bias") : Tensor();
    const F::Conv2dWeight weight(fx.tensor("weight"), options);
    prepared += weight.winograd().defined() ? 1 : 0;
    const Tensor y = F::conv2d(fx.tensor("input"), weight, bias);
    EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol);
    EXPECT_TENSOR_NEAR(y, F::conv2d(fx.tensor("input"), fx.tensor("weight"), bias, options),
                       kExact);
    ++cases;
  }
  EXPECT_GE(cases, 35);
  EXPECT_GE(prepared, 1);
  // Winograd-sized: several chunks of tile rows, groups, odd sizes, both thread counts.
  const Tensor x = test::random_tensor({2, 32, 37, 45}, 7);
  const Tensor w = test::random_tensor({24, 16, 3, 3}, 8, -0.2f, 0.2f);
  const Tensor b = test::random_tensor({24}, 9);
  const auto options = F::Conv2dOptions().padding({1, 2}).groups(2);
  const F::Conv2dWeight weight(w, options);
  ASSERT_TRUE(weight.winograd().defined());
  EXPECT_EQ(weight.winograd().shape(), (cvattn::Shape{16, 24, 16}));
  EXPECT_EQ(weight.winograd43().shape(), (cvattn::Shape{36, 24, 16}));
  EXPECT_GT(weight.winograd_scale(), 0.0f);
  for (int threads : {1, 2}) {
    ThreadScope scope(threads);
    EXPECT_TENSOR_NEAR(F::conv2d(x, weight, b), F::conv2d(x, w, b, options), kExact);
  }
  // A dilated 3x3 with padding = dilation runs as 3x3 convs of its sub-images, with the same
  // transforms, prepared too.
  for (const std::int64_t d : {2, 3}) {
    const auto dilated = F::Conv2dOptions().padding(d).dilation(d).groups(2);
    const F::Conv2dWeight prepared_dilated(w, dilated);
    ASSERT_TRUE(prepared_dilated.winograd43().defined()) << "dilation " << d;
    for (int threads : {1, 2}) {
      ThreadScope scope(threads);
      EXPECT_TENSOR_NEAR(F::conv2d(x, prepared_dilated, b), F::conv2d(x, w, b, dilated), kExact)
          << "dilation " << d << ", threads " << threads;
    }
  }
  EXPECT_FALSE(
      F::Conv2dWeight(w, F::Conv2dOptions().padding(1).dilation(2).groups(2)).winograd().defined());
  EXPECT_FALSE(F::Conv2dWeight(w, F::Conv2dOptions().stride(2).groups(2)).winograd().defined());
  EXPECT_FALSE(F::Conv2dWeight(test::random_tensor({4, 4, 3, 3}, 1), {}).winograd().defined());
}

TEST(Conv2d, FusedActivationMatchesPyTorch) {
  int cases = 0, acts = 0;
  for (const auto& fx : test::fixtures_in("conv_act")) {
    SCOPED_TRACE(fx.name());
    const auto options = options_of(fx);
    const Tensor bias = fx.params()["bias"].get<bool>() ? fx.tensor("bias") : Tensor();
    const F::Conv2dWeight weight(fx.tensor("weight"), options);
    for (const auto& word : fx.params()["acts"]) {
      const ActLayer act = parse_act_layer(word.get<std::string>());
      SCOPED_TRACE(word.get<std::string>());
      for (int threads : {1, 2}) {
        ThreadScope scope(threads);
        const Tensor y = F::conv2d(fx.tensor("input"), weight, bias, act);
        EXPECT_TENSOR_NEAR(y, fx.tensor("output_" + word.get<std::string>()), kTol);
        // The fused epilogue applies the same kernel as the separate pass: identical values.
        EXPECT_TENSOR_NEAR(y, F::activation(F::conv2d(fx.tensor("input"), weight, bias), act),
                           kExact);
      }
      ++acts;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 9) << "fixtures missing: run tests/fixtures/conv_act.py";
  EXPECT_EQ(acts, 27);
}

TEST(Conv2d, FusedActivationEqualsTheTwoPassFormOnEveryPath) {
  // Shapes sized for each path (conv.cpp): chunked GEMMs, several Winograd tile-row runs,
  // unbatched input, no input channels.
  const std::vector<RandomCase> cases = {
      {{2, 24, 33, 35}, {20, 24, 1, 1}, 1, 0, 1, 1, true},
      {{1, 9, 31, 29}, {18, 1, 3, 3}, 2, 1, 1, 9, true},
      {{2, 16, 37, 45}, {24, 8, 3, 3}, 1, {1, 2}, 1, 2, true},
      {{1, 128, 11, 9}, {3, 128, 5, 5}, 1, 2, 1, 1, false},
      {{1, 8, 30, 26}, {8, 8, 3, 3}, 1, 3, 3, 1, true},
      {{1, 0, 6, 7}, {5, 0, 3, 3}, 1, 1, 1, 1, true},
  };
  int seed = 40;
  for (const auto& c : cases) {
    SCOPED_TRACE(to_string(c.input));
    const Tensor x = test::random_tensor(c.input, seed++, -3.0f, 3.0f);
    const Tensor w = test::random_tensor(c.weight, seed++, -0.3f, 0.3f);
    const Tensor b = c.bias ? test::random_tensor({c.weight[0]}, seed++) : Tensor();
    const auto options = F::Conv2dOptions()
                             .stride(c.stride)
                             .padding(c.padding)
                             .dilation(c.dilation)
                             .groups(c.groups);
    const F::Conv2dWeight weight(w, options);
    for (ActLayer act : {ActLayer::relu, ActLayer::relu6, ActLayer::sigmoid, ActLayer::tanh,
                         ActLayer::silu, ActLayer::gelu, ActLayer::gelu_tanh, ActLayer::hard_swish,
                         ActLayer::hard_sigmoid, ActLayer::mish}) {
      SCOPED_TRACE(to_string(act));
      for (int threads : {1, 2}) {
        ThreadScope scope(threads);
        EXPECT_TENSOR_NEAR(F::conv2d(x, weight, b, act),
                           F::activation(F::conv2d(x, w, b, options), act), kExact);
      }
    }
  }
  const Tensor x = test::random_tensor({8, 9, 10}, 3);  // unbatched keeps rank 3
  const F::Conv2dWeight weight(test::random_tensor({4, 8, 3, 3}, 4), F::Conv2dOptions().padding(1));
  const Tensor y = F::conv2d(x, weight, {}, ActLayer::silu);
  EXPECT_EQ(y.shape(), (Shape{4, 9, 10}));
  EXPECT_TENSOR_NEAR(y, F::silu(F::conv2d(x, weight)), kExact);
}

// Conv2dWeight also packs the weight of each group for the matrix product (im2col and wide 1x1
// paths), and the Winograd kernel whose products run on it: the same values as the stateless call
// bit for bit on every SIMD target, including a target whose register tile differs from the one it
// was packed for (it packs per call there).
TEST(Conv2d, PreparedWeightPackedForTheProductOnEveryTarget) {
  struct Case {
    Shape input, weight;
    std::int64_t stride, padding, groups;
  };
  const std::vector<Case> cases = {
      {{1, 300, 7, 7}, {29, 300, 3, 3}, 1, 1, 1},    // 7x7 plane: im2col, K past one block
      {{2, 40, 15, 13}, {26, 20, 3, 3}, 2, 1, 2},    // stride 2, groups, batch
      {{1, 130, 9, 11}, {37, 130, 1, 1}, 1, 0, 1},   // 1x1 past the direct kernel's K
      {{1, 260, 6, 5}, {50, 130, 1, 1}, 1, 0, 2},    // grouped 1x1
      {{1, 24, 12, 12}, {13, 24, 5, 5}, 1, 2, 1},    // 5x5
      {{1, 16, 9, 9}, {16, 16, 1, 1}, 2, 0, 1},      // 1x1 stride 2 (downsample)
      {{1, 130, 14, 14}, {24, 130, 3, 3}, 1, 1, 1},  // Winograd F(4x4) products on the GEMM
      {{2, 240, 12, 12}, {32, 120, 3, 3}, 1, 1, 2},  // the same, groups and batch
      {{1, 130, 8, 56}, {24, 130, 3, 3}, 1, 1, 1},   // the same, rows of 14 tiles stored in 16
      // [Cout, 49] products computed as their transpose on 256- and 512-bit targets, the weight
      // packed in that form (cvattn::detail::sgemm_swaps).
      {{1, 300, 7, 7}, {128, 300, 3, 3}, 1, 1, 1},
      {{2, 130, 7, 7}, {96, 130, 1, 1}, 1, 0, 1},
      {{1, 64, 14, 13}, {160, 32, 3, 3}, 2, 1, 2},
  };
  int seed = 90;
  for (const auto& c : cases) {
    SCOPED_TRACE(to_string(c.input) + " " + to_string(c.weight));
    const Tensor x = test::random_tensor(c.input, seed++);
    const Tensor w = test::random_tensor(c.weight, seed++, -0.2f, 0.2f);
    const Tensor b = test::random_tensor({c.weight[0]}, seed++);
    const auto options = F::Conv2dOptions().stride(c.stride).padding(c.padding).groups(c.groups);
    const F::Conv2dWeight weight(w, options);
    test::for_each_simd_target([&] {
      for (int threads : {1, 2}) {
        ThreadScope scope(threads);
        EXPECT_TENSOR_NEAR(F::conv2d(x, weight, b), F::conv2d(x, w, b, options), kExact);
      }
    });
    // And against the direct sum (tests/support/naive_conv.hpp).
    EXPECT_TENSOR_NEAR(F::conv2d(x, weight, b),
                       naive_conv2d(x, w, b, c.stride, c.padding, 1, c.groups), kTol);
  }
}

// The transforms and the packed copy are made by the first call that needs them: concurrent
// first calls on one fresh Conv2dWeight make them once and all get conv2d's own values (the tsan
// preset runs this case under ThreadSanitizer).
TEST(Conv2d, PreparedWeightThreadSafeOnFirstUse) {
  struct Case {
    Shape input, weight;
    std::int64_t stride;
  };
  const std::vector<Case> cases = {
      {{1, 16, 20, 20}, {16, 16, 3, 3}, 1},    // Winograd
      {{1, 130, 7, 7}, {24, 130, 3, 3}, 1},    // 3x3 on a small plane: im2col
      {{1, 64, 7, 7}, {128, 64, 3, 3}, 1},     // the same, computed as its transpose
      {{1, 16, 20, 20}, {24, 16, 3, 3}, 2},    // stride 2: im2col
      {{1, 200, 6, 6}, {40, 200, 1, 1}, 1},    // wide 1x1: the GEMM
      {{1, 130, 14, 14}, {24, 130, 3, 3}, 1},  // Winograd products on the GEMM
  };
  int seed = 120;
  for (const auto& c : cases) {
    SCOPED_TRACE(to_string(c.input) + " " + to_string(c.weight));
    const Tensor x = test::random_tensor(c.input, seed++);
    const Tensor w = test::random_tensor(c.weight, seed++, -0.2f, 0.2f);
    const auto options = F::Conv2dOptions().stride(c.stride).padding(c.weight[2] / 2);
    const Tensor want = F::conv2d(x, w, {}, options);
    const F::Conv2dWeight weight(w, options);
    std::vector<Tensor> got(6);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < got.size(); ++t) {
      pool.emplace_back([&, t] { got[t] = F::conv2d(x, weight); });
    }
    for (auto& th : pool) th.join();
    for (const Tensor& y : got) EXPECT_TENSOR_NEAR(y, want, kExact);
  }
}

TEST(Conv2d, PreparedWeightRejectsBadWeightsAndOptions) {
  EXPECT_THROW(F::Conv2dWeight(Tensor(), {}), cvattn::Error);
  EXPECT_THROW(F::Conv2dWeight(Tensor::zeros({4, 3, 3}), {}), cvattn::ShapeError);
  EXPECT_THROW(F::Conv2dWeight(Tensor::zeros({6, 2, 3, 3}), F::Conv2dOptions().groups(4)),
               cvattn::ValueError);
  EXPECT_THROW(F::Conv2dWeight(Tensor::zeros({6, 2, 3, 3}), F::Conv2dOptions().stride(0)),
               cvattn::ValueError);
  // The input is checked against the weight as conv2d does.
  const F::Conv2dWeight weight(Tensor::zeros({8, 8, 3, 3}), F::Conv2dOptions().padding(1));
  EXPECT_THROW((void)F::conv2d(Tensor::zeros({1, 7, 9, 9}), weight), cvattn::ShapeError);
  EXPECT_EQ(F::conv2d(Tensor::zeros({8, 9, 9}), weight).shape(), (cvattn::Shape{8, 9, 9}));
}

}  // namespace
}  // namespace cvattn
