// deform_conv2d and sampling_positions against torchvision fixtures, the docs/modules.md §10.1
// worked examples, a direct transcription of the §10.1 formula, and their invariants.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/deform_conv.hpp"
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
constexpr test::Tolerance kTight{1e-6, 0};
constexpr test::Tolerance kExact{0, 0};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor optional(const test::Fixture& fx, const char* name) {
  return fx.has(name) ? fx.tensor(name) : Tensor();
}

F::DeformConv2dOptions options_of(const test::Fixture& fx) {
  const auto& p = fx.params();
  return F::DeformConv2dOptions()
      .stride(pair(p["stride"]))
      .padding(pair(p["padding"]))
      .dilation(pair(p["dilation"]));
}

// The 3x3 input [[1,2,3],[4,5,6],[7,8,9]] of the §10.1 worked examples.
Tensor worked_input() { return Tensor::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }

// docs/modules.md §10.1 transcribed literally, accumulating in double.
Tensor naive_deform_conv2d(const Tensor& input, const Tensor& offset, const Tensor& weight,
                           const Tensor& bias, const Tensor& mask, Pair2 s, Pair2 p, Pair2 d) {
  const std::int64_t n = input.dim(0), cin = input.dim(1), h = input.dim(2), w = input.dim(3);
  const std::int64_t cout = weight.dim(0), cin_g = weight.dim(1), kh = weight.dim(2),
                     kw = weight.dim(3), taps = kh * kw;
  const std::int64_t gw = cin / cin_g, cout_g = cout / gw;
  const std::int64_t go = offset.dim(1) / (2 * taps), cin_o = cin / go;
  const std::int64_t ho = offset.dim(2), wo = offset.dim(3);
  Tensor out = Tensor::empty({n, cout, ho, wo});
  auto at = [](const Tensor& t, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t e) {
    return static_cast<double>(t.at(a, b, c, e));
  };
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t o = 0; o < cout; ++o) {
      const std::int64_t grp = o / cout_g;
      for (std::int64_t oy = 0; oy < ho; ++oy) {
        for (std::int64_t ox = 0; ox < wo; ++ox) {
          double acc = bias.defined() ? bias[o] : 0.0;
          for (std::int64_t cc = 0; cc < cin_g; ++cc) {
            const std::int64_t c = grp * cin_g + cc;
            const std::int64_t g = c / cin_o;
            for (std::int64_t i = 0; i < kh; ++i) {
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t k = i * kw + j;
                const float py = static_cast<float>(oy * s.h - p.h + i * d.h) +
                                 offset.at(b, g * 2 * taps + 2 * k, oy, ox);
                const float px = static_cast<float>(ox * s.w - p.w + j * d.w) +
                                 offset.at(b, g * 2 * taps + 2 * k + 1, oy, ox);
                double val = 0;
                if (std::isfinite(py) && std::isfinite(px) && py > -1 && py < h && px > -1 &&
                    px < w) {
                  const double y0 = std::floor(py), x0 = std::floor(px);
                  const double ly = py - y0, lx = px - x0;
                  auto r = [&](double yy, double xx) {
                    return yy >= 0 && yy <= h - 1 && xx >= 0 && xx <= w - 1
                               ? at(input, b, c, static_cast<std::int64_t>(yy),
                                    static_cast<std::int64_t>(xx))
                               : 0.0;
                  };
                  val = (1 - ly) * (1 - lx) * r(y0, x0) + (1 - ly) * lx * r(y0, x0 + 1) +
                        ly * (1 - lx) * r(y0 + 1, x0) + ly * lx * r(y0 + 1, x0 + 1);
                }
                if (mask.defined()) val *= at(mask, b, g * taps + k, oy, ox);
                acc += at(weight, o, cc, i, j) * val;
              }
            }
          }
          out[((b * cout + o) * ho + oy) * wo + ox] = static_cast<float>(acc);
        }
      }
    }
  }
  return out;
}

TEST(DeformConv2d, MatchesTorchvision) {
  const auto cases = test::fixtures_in("deform/functional");
  ASSERT_GE(cases.size(), 20u);
  for (int threads : {1, 2, 3}) {
    ThreadScope scope(threads);
    for (const auto& fx : cases) {
      SCOPED_TRACE(fx.name() + " threads=" + std::to_string(threads));
      const Tensor y =
          F::deform_conv2d(fx.tensor("input"), fx.tensor("offset"), fx.tensor("weight"),
                           optional(fx, "bias"), optional(fx, "mask"), options_of(fx));
      EXPECT_TENSOR_NEAR(y, fx.tensor("output"), kTol);
    }
  }
}

TEST(DeformConv2d, WorkedExampleFractionalOffset) {
  // 1x1 kernel, weight 1, dy = 0.5 and dx = 0.25 everywhere.
  Tensor offset = Tensor::empty({1, 2, 3, 3});
  for (int i = 0; i < 9; ++i) offset[i] = 0.5f, offset[9 + i] = 0.25f;
  const Tensor y = F::deform_conv2d(worked_input(), offset, Tensor::full({1, 1, 1, 1}, 1.0f));
  const Tensor expected = Tensor::from_vector(
      {1, 1, 3, 3}, {2.75f, 3.75f, 3.375f, 5.75f, 6.75f, 5.625f, 3.625f, 4.125f, 3.375f});
  EXPECT_TENSOR_NEAR(y, expected, kTight);
}

TEST(DeformConv2d, WorkedExampleBoundaryRule) {
  // A 1x1 kernel at output (0, 0) samples exactly at (dy, dx).
  const struct {
    float py, px, expected;
  } samples[] = {
      {-1.0f, 0.0f, 0.0f}, {-0.5f, 0.0f, 0.5f}, {3.0f, 0.0f, 0.0f}, {1.5f, -0.75f, 1.375f}};
  for (const auto& s : samples) {
    SCOPED_TRACE(std::to_string(s.py) + ", " + std::to_string(s.px));
    Tensor offset = Tensor::zeros({1, 2, 3, 3});
    offset[0] = s.py;
    offset[9] = s.px;
    const Tensor y = F::deform_conv2d(worked_input(), offset, Tensor::full({1, 1, 1, 1}, 1.0f));
    EXPECT_FLOAT_EQ(y[0], s.expected);
  }
}

TEST(DeformConv2d, WorkedExampleThreeByThree) {
  const Tensor ones = Tensor::full({1, 1, 3, 3}, 1.0f);
  const auto pad1 = F::DeformConv2dOptions().padding(1);
  Tensor offset = Tensor::zeros({1, 18, 3, 3});
  const Tensor expected = Tensor::from_vector({1, 1, 3, 3}, {12, 21, 16, 27, 45, 33, 24, 39, 28});
  EXPECT_TENSOR_NEAR(F::deform_conv2d(worked_input(), offset, ones, {}, {}, pad1), expected,
                     kTight);
  // At output (1, 1): centre tap (k=4) dx = +1 (channel 9), top-left tap (k=0) dy = +0.5
  // (channel 0).
  const std::int64_t centre = 1 * 3 + 1;
  offset[9 * 9 + centre] = 1.0f;
  offset[0 * 9 + centre] = 0.5f;
  Tensor y = F::deform_conv2d(worked_input(), offset, ones, {}, {}, pad1);
  EXPECT_FLOAT_EQ(y[centre], 47.5f);
  Tensor mask = Tensor::full({1, 9, 3, 3}, 1.0f);
  mask[4 * 9 + centre] = 0.5f;
  y = F::deform_conv2d(worked_input(), offset, ones, {}, mask, pad1);
  EXPECT_FLOAT_EQ(y[centre], 44.5f);
}

TEST(DeformConv2d, ZeroOffsetsAndUnitMaskEqualConv2d) {
  struct Config {
    Shape input;
    Shape weight;
    Pair2 stride, padding, dilation;
    std::int64_t offset_groups;
  };
  const Config configs[] = {
      {{2, 4, 9, 7}, {6, 4, 3, 3}, 1, 1, 1, 1},
      {{1, 6, 11, 8}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 3},
      {{1, 64, 20, 19}, {16, 64, 3, 3}, 1, 1, 1, 2},
      {{3, 2, 5, 5}, {2, 2, 1, 1}, 1, 0, 1, 1},
  };
  for (const auto& cfg : configs) {
    const Tensor x = test::random_tensor(cfg.input, 1);
    const Tensor w = test::random_tensor(cfg.weight, 2);
    const Tensor b = test::random_tensor({cfg.weight[0]}, 3);
    const std::int64_t groups = cfg.input[1] / cfg.weight[1];
    const Tensor ref = F::conv2d(x, w, b,
                                 F::Conv2dOptions()
                                     .stride(cfg.stride)
                                     .padding(cfg.padding)
                                     .dilation(cfg.dilation)
                                     .groups(groups));
    const std::int64_t taps = cfg.weight[2] * cfg.weight[3];
    const Tensor offset =
        Tensor::zeros({ref.dim(0), 2 * cfg.offset_groups * taps, ref.dim(2), ref.dim(3)});
    const Tensor mask =
        Tensor::full({ref.dim(0), cfg.offset_groups * taps, ref.dim(2), ref.dim(3)}, 1.0f);
    const auto o =
        F::DeformConv2dOptions().stride(cfg.stride).padding(cfg.padding).dilation(cfg.dilation);
    EXPECT_TENSOR_NEAR(F::deform_conv2d(x, offset, w, b, {}, o), ref, kTol);
    EXPECT_TENSOR_NEAR(F::deform_conv2d(x, offset, w, b, mask, o), ref, kTol);
  }
}

TEST(DeformConv2d, IntegerOffsetsShiftTheImage) {
  // A 1x1 kernel with offset (dy, dx) = (1, -2) reads input (oy + 1, ox - 2), 0 outside.
  const Tensor x = test::random_tensor({1, 2, 5, 6}, 7);
  Tensor offset = Tensor::zeros({1, 2, 5, 6});
  for (int i = 0; i < 30; ++i) offset[i] = 1.0f, offset[30 + i] = -2.0f;
  const Tensor w = Tensor::from_vector({2, 2, 1, 1}, {1, 0, 0, 1});
  const Tensor y = F::deform_conv2d(x, offset, w);
  for (int c = 0; c < 2; ++c) {
    for (int oy = 0; oy < 5; ++oy) {
      for (int ox = 0; ox < 6; ++ox) {
        const bool inside = oy + 1 < 5 && ox - 2 >= 0;
        EXPECT_EQ(y.at(0, c, oy, ox), inside ? x.at(0, c, oy + 1, ox - 2) : 0.0f);
      }
    }
  }
}

TEST(DeformConv2d, MatchesFormulaOnRandomConfigurations) {
  test::Random rng(99);
  auto pick = [&](int lo, int hi) {
    return static_cast<std::int64_t>(lo + static_cast<int>(rng.uniform(0, 1) * (hi - lo + 1)) %
                                              (hi - lo + 1));
  };
  for (int trial = 0; trial < 40; ++trial) {
    const std::int64_t go = pick(1, 3), gw = pick(1, 3);
    const std::int64_t cin = go * gw * pick(1, 3);
    const std::int64_t cout = gw * pick(1, 3);
    const Pair2 k{pick(1, 4), pick(1, 4)}, s{pick(1, 3), pick(1, 3)}, d{pick(1, 2), pick(1, 2)},
        p{pick(0, 2), pick(0, 2)};
    const std::int64_t h = d.h * (k.h - 1) + 1 + pick(0, 8);
    const std::int64_t w = d.w * (k.w - 1) + 1 + pick(0, 8);
    const std::int64_t n = pick(1, 3);
    const std::int64_t ho = (h + 2 * p.h - d.h * (k.h - 1) - 1) / s.h + 1;
    const std::int64_t wo = (w + 2 * p.w - d.w * (k.w - 1) - 1) / s.w + 1;
    const std::int64_t taps = k.h * k.w;
    const auto seed = static_cast<std::uint64_t>(trial) * 10;
    const Tensor x = test::random_tensor({n, cin, h, w}, seed + 1);
    const Tensor wt = test::random_tensor({cout, cin / gw, k.h, k.w}, seed + 2);
    const Tensor b = trial % 2 ? test::random_tensor({cout}, seed + 3) : Tensor();
    const Tensor off = test::random_tensor({n, 2 * go * taps, ho, wo}, seed + 4, -4.0f, 4.0f);
    const Tensor m =
        trial % 3 ? test::random_tensor({n, go * taps, ho, wo}, seed + 5, -1, 2) : Tensor();
    SCOPED_TRACE("trial " + std::to_string(trial));
    for (int threads : {1, 2}) {
      ThreadScope scope(threads);
      const auto o = F::DeformConv2dOptions().stride(s).padding(p).dilation(d);
      EXPECT_TENSOR_NEAR(F::deform_conv2d(x, off, wt, b, m, o),
                         naive_deform_conv2d(x, off, wt, b, m, s, p, d), kTol);
    }
  }
}

TEST(DeformConv2d, ManyChunksAndDeepReductionMatchFormula) {
  // 3x3 over 1200 channels in two weight groups: a 5400-long reduction per group, split into
  // blocks, over chunks of the 256 output pixels, with five offset groups, one straddling the
  // weight groups.
  const Tensor x = test::random_tensor({2, 1200, 16, 16}, 11);
  const Tensor w = test::random_tensor({4, 600, 3, 3}, 12, -0.05f, 0.05f);
  const Tensor off = test::random_tensor({2, 2 * 5 * 9, 16, 16}, 13, -3, 3);
  const Tensor m = test::random_tensor({2, 5 * 9, 16, 16}, 14, 0, 1);
  const Tensor b = test::random_tensor({4}, 15);
  const auto o = F::DeformConv2dOptions().padding(1);
  const Tensor ref = naive_deform_conv2d(x, off, w, b, m, 1, 1, 1);
  for (int threads : {1, 2, 4}) {
    ThreadScope scope(threads);
    EXPECT_TENSOR_NEAR(F::deform_conv2d(x, off, w, b, m, o), ref, kTol) << threads;
  }
}

TEST(DeformConv2d, NonFiniteOffsetsReadZero) {
  const Tensor x = test::random_tensor({1, 3, 5, 6}, 21);
  const Tensor w = test::random_tensor({2, 3, 3, 3}, 22);
  const Tensor b = Tensor::from_vector({2}, {0.25f, -1.5f});
  for (float bad : {kNaN, kInf, -kInf, 1e30f, -1e30f, 3e9f}) {
    SCOPED_TRACE(bad);
    // Every sample far away or undefined: only the bias remains.
    const Tensor off = Tensor::full({1, 18, 5, 6}, bad);
    const Tensor y = F::deform_conv2d(x, off, w, b, {}, F::DeformConv2dOptions().padding(1));
    for (std::int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y[i], b[i / 30]) << i;
  }
  // NaN in one component only (dx) of one tap: that sample reads 0.
  Tensor off = Tensor::zeros({1, 2, 3, 3});
  off[9 + 4] = kNaN;  // dx of the 1x1 tap at output (1, 1)
  const Tensor y = F::deform_conv2d(worked_input(), off, Tensor::full({1, 1, 1, 1}, 1.0f));
  EXPECT_EQ(y[4], 0.0f);
  EXPECT_EQ(y[3], 4.0f);
}

TEST(DeformConv2d, NonFiniteMaskPoisonsOnlyItsSample) {
  // torchvision multiplies the sample by the mask even when the sample is 0 (out of range).
  Tensor off = Tensor::zeros({1, 2, 3, 3});
  off[4] = 100.0f;  // output (1, 1) samples far outside
  Tensor mask = Tensor::full({1, 1, 3, 3}, 1.0f);
  mask[4] = kNaN;
  const Tensor y =
      F::deform_conv2d(worked_input(), off, Tensor::full({1, 1, 1, 1}, 1.0f), {}, mask);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[8], 9.0f);
}

TEST(DeformConv2d, InfinitePixelOnlyAffectsSamplesThatTouchIt) {
  // As torchvision: corners outside the image are skipped, never multiplied by zero.
  Tensor x = Tensor::full({1, 1, 5, 5}, 1.0f);
  x[0] = kInf;  // pixel (0, 0)
  Tensor off = Tensor::zeros({1, 2, 5, 5});
  off[2 * 5 + 2] = -2.5f;  // output (2, 2) samples (-0.5, 2): half of pixel (0, 2)
  off[2 * 5 + 3] = -4.0f;  // output (2, 3) samples (-2, 3): out of range
  const Tensor y = F::deform_conv2d(x, off, Tensor::full({1, 1, 1, 1}, 1.0f));
  EXPECT_FLOAT_EQ(y[2 * 5 + 2], 0.5f);
  EXPECT_EQ(y[2 * 5 + 3], 0.0f);
  EXPECT_EQ(y[0], kInf);
}

TEST(DeformConv2d, EmptyBatchAndEmptyOutputChannels) {
  const Tensor y0 = F::deform_conv2d(Tensor::zeros({0, 2, 5, 5}), Tensor::zeros({0, 18, 3, 3}),
                                     Tensor::zeros({3, 2, 3, 3}));
  EXPECT_EQ(y0.shape(), (Shape{0, 3, 3, 3}));
  const Tensor y1 = F::deform_conv2d(Tensor::zeros({1, 2, 5, 5}), Tensor::zeros({1, 18, 3, 3}),
                                     Tensor::zeros({0, 2, 3, 3}));
  EXPECT_EQ(y1.shape(), (Shape{1, 0, 3, 3}));
}

TEST(DeformConv2d, EmptyImageReadsZeros) {
  // H = 0 with padding: every sample lies outside the (empty) image, only the bias remains.
  const Tensor off = test::random_tensor({1, 2, 2, 4}, 51, -1, 1);
  const Tensor b = Tensor::from_vector({3}, {1, 2, 3});
  const Tensor y =
      F::deform_conv2d(Tensor::zeros({1, 2, 0, 4}), off, test::random_tensor({3, 2, 1, 1}, 52), b,
                       {}, F::DeformConv2dOptions().padding({1, 0}));
  ASSERT_EQ(y.shape(), (Shape{1, 3, 2, 4}));
  for (std::int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y[i], b[i / 8]) << i;
}

TEST(DeformConv2d, ConcurrentCallsAgree) {
  const Tensor x = test::random_tensor({1, 16, 12, 12}, 31);
  const Tensor w = test::random_tensor({8, 16, 3, 3}, 32);
  const Tensor off = test::random_tensor({1, 18, 12, 12}, 33, -2, 2);
  const Tensor m = test::random_tensor({1, 9, 12, 12}, 34, 0, 1);
  const auto o = F::DeformConv2dOptions().padding(1);
  const Tensor ref = F::deform_conv2d(x, off, w, {}, m, o);
  std::vector<Tensor> results(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = F::deform_conv2d(x, off, w, {}, m, o); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_TENSOR_NEAR(r, ref, kExact);
}

TEST(DeformConv2d, RejectsInconsistentShapes) {
  const Tensor x = Tensor::zeros({2, 4, 7, 7});
  const Tensor w = Tensor::zeros({6, 4, 3, 3});
  const Tensor off = Tensor::zeros({2, 18, 5, 5});
  auto call = [](const Tensor& a, const Tensor& o, const Tensor& wt, const Tensor& b = {},
                 const Tensor& m = {}, const F::DeformConv2dOptions& opt = {}) {
    return [=] { (void)F::deform_conv2d(a, o, wt, b, m, opt); };
  };
  EXPECT_THAT(call(Tensor::zeros({4, 7, 7}), off, w),
              ThrowsMessage<ShapeError>(HasSubstr("deform_conv2d: tensor 'input'")));
  EXPECT_THAT(call(x, Tensor(), w),
              ThrowsMessage<ShapeError>(HasSubstr("deform_conv2d: tensor 'offset'")));
  EXPECT_THAT(
      call(x, Tensor::zeros({1, 18, 5, 5}), w),
      ThrowsMessage<ShapeError>(HasSubstr(
          "tensor 'offset' expected batch 2 (of 'input' [2, 4, 7, 7]), got [1, 18, 5, 5]")));
  EXPECT_THAT(call(x, Tensor::zeros({2, 17, 5, 5}), w),
              ThrowsMessage<ShapeError>(HasSubstr("a positive multiple of 18 for the 3x3 kernel")));
  EXPECT_THAT(call(x, Tensor::zeros({2, 0, 5, 5}), w),
              ThrowsMessage<ShapeError>(HasSubstr("a positive multiple of 18")));
  EXPECT_THAT(call(x, Tensor::zeros({2, 54, 5, 5}), w),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "the 3 offset groups of 'offset' [2, 54, 5, 5] must divide the channels of "
                  "'input' [2, 4, 7, 7]")));
  EXPECT_THAT(call(x, Tensor::zeros({2, 18, 7, 7}), w),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "tensor 'offset' expected the output size (5, 5) in its last two dimensions, "
                  "got [2, 18, 7, 7]")));
  EXPECT_THAT(call(x, off, Tensor::zeros({6, 3, 3, 3})),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "tensor 'input' expected a multiple of 3 channels (weight [6, 3, 3, 3])")));
  EXPECT_THAT(
      call(x, off, Tensor::zeros({5, 2, 3, 3})),
      ThrowsMessage<ShapeError>(HasSubstr("5 output channels, not a multiple of its 2 groups")));
  EXPECT_THAT(call(x, off, Tensor::zeros({6, 0, 3, 3})),
              ThrowsMessage<ShapeError>(HasSubstr("at least one input channel")));
  EXPECT_THAT(call(Tensor::zeros({2, 0, 7, 7}), off, Tensor::zeros({6, 1, 3, 3})),
              ThrowsMessage<ShapeError>(
                  HasSubstr("tensor 'input' expected at least one channel, got [2, 0, 7, 7]")));
  EXPECT_THAT(call(x, off, Tensor::zeros({0, 4, std::int64_t{1} << 20, std::int64_t{1} << 20})),
              ThrowsMessage<ShapeError>(HasSubstr("more kernel taps than an offset tensor")));
  EXPECT_THAT(call(x, off, Tensor::zeros({6, 4, 0, 3})),
              ThrowsMessage<ShapeError>(HasSubstr("has an empty kernel")));
  EXPECT_THAT(call(x, off, w, {}, Tensor::zeros({2, 18, 5, 5})),
              ThrowsMessage<ShapeError>(
                  HasSubstr("tensor 'mask' expected shape [2, 9, 5, 5], got [2, 18, 5, 5]")));
  EXPECT_THAT(call(x, off, w, Tensor::zeros({5})),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'bias' expected shape [6], got [5]")));
  EXPECT_THAT(call(Tensor::zeros({1, 4, 2, 2}), Tensor::zeros({1, 18, 1, 1}), w),
              ThrowsMessage<ShapeError>(HasSubstr("larger than the padded input (2, 2)")));
  EXPECT_THAT(call(x, off, w, {}, {}, F::DeformConv2dOptions().stride(0)),
              ThrowsMessage<ValueError>(HasSubstr("deform_conv2d: stride must be positive")));
  EXPECT_THAT(call(x, off, w, {}, {}, F::DeformConv2dOptions().padding({-1, 0})),
              ThrowsMessage<ValueError>(HasSubstr("padding must be non-negative")));
  EXPECT_THAT(call(x, off, w, {}, {}, F::DeformConv2dOptions().dilation({1, 0})),
              ThrowsMessage<ValueError>(HasSubstr("dilation must be positive")));
  EXPECT_THAT(call(x, off, w, {}, {}, F::DeformConv2dOptions().dilation(std::int64_t{1} << 40)),
              ThrowsMessage<ValueError>(HasSubstr("dilation must be at most")));
}

TEST(SamplingPositions, RegularGridPlusOffset) {
  // 3x3 kernel, stride 2, padding 1, dilation (1, 2); output (oy=1, ox=2) with offsets
  // dy_k = k / 10, dx_k = -k.
  const std::int64_t ho = 3, wo = 4;
  Tensor off = Tensor::zeros({1, 18, ho, wo});
  const std::int64_t at = 1 * wo + 2;
  for (int k = 0; k < 9; ++k) {
    off[(2 * k) * ho * wo + at] = static_cast<float>(k) / 10;
    off[(2 * k + 1) * ho * wo + at] = static_cast<float>(-k);
  }
  const auto o = F::DeformConv2dOptions().stride(2).padding(1).dilation({1, 2});
  const Tensor pos = F::sampling_positions(off, 3, {cv::Point(2, 1)}, o);
  ASSERT_EQ(pos.shape(), (Shape{1, 1, 1, 9, 2}));
  for (int k = 0; k < 9; ++k) {
    const int i = k / 3, j = k % 3;
    EXPECT_FLOAT_EQ(pos[2 * k], static_cast<float>(1 * 2 - 1 + i) + static_cast<float>(k) / 10);
    EXPECT_FLOAT_EQ(pos[2 * k + 1], static_cast<float>(2 * 2 - 1 + 2 * j - k));
  }
}

TEST(SamplingPositions, AllPointsAndOffsetGroups) {
  const Tensor off = test::random_tensor({2, 2 * 2 * 2, 3, 5}, 41);  // kernel (1, 2), 2 groups
  const Tensor pos = F::sampling_positions(off, {1, 2});
  ASSERT_EQ(pos.shape(), (Shape{2, 2, 15, 2, 2}));
  // n=1, group 1, point (oy=2, ox=3), tap j=1: x = 3 + 1 + dx.
  const std::int64_t p = 2 * 5 + 3;
  const float dx = off.at(1, 1 * 4 + 2 * 1 + 1, 2, 3);
  const float dy = off.at(1, 1 * 4 + 2 * 1, 2, 3);
  const float* e = pos.data() + (((1 * 2 + 1) * 15 + p) * 2 + 1) * 2;
  EXPECT_FLOAT_EQ(e[0], 2.0f + dy);
  EXPECT_FLOAT_EQ(e[1], 4.0f + dx);
}

TEST(SamplingPositions, RejectsBadArguments) {
  const Tensor off = Tensor::zeros({1, 18, 3, 4});
  EXPECT_THAT(test::Call([&] { (void)F::sampling_positions(off, 3, {cv::Point(4, 0)}); }),
              ThrowsMessage<ShapeError>(HasSubstr("point (x=4, y=0) lies outside the 4x3 output")));
  EXPECT_THAT(test::Call([&] { (void)F::sampling_positions(off, 2); }),
              ThrowsMessage<ShapeError>(HasSubstr("a positive multiple of 8")));
  EXPECT_THAT(test::Call([&] { (void)F::sampling_positions(off, 0); }),
              ThrowsMessage<ValueError>(HasSubstr("kernel_size must be positive")));
}

}  // namespace
}  // namespace cvattn
