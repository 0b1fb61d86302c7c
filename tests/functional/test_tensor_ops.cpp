// Broadcasting arithmetic, cat, permute / transpose, reshape / flatten, slice / narrow /
// select, mean / amax and pad against PyTorch (tests/fixtures/layers.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/tensor_ops.hpp"
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

TEST(Broadcast, ArithmeticMatchesPyTorch) {
  const auto cases = test::fixtures_in("layers", "binary_");
  ASSERT_EQ(cases.size(), 20u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const Tensor a = fx.tensor("a"), b = fx.tensor("b");
    EXPECT_TENSOR_NEAR(F::add(a, b), fx.tensor("add"), kExact);
    EXPECT_TENSOR_NEAR(F::sub(a, b), fx.tensor("sub"), kExact);
    EXPECT_TENSOR_NEAR(F::mul(a, b), fx.tensor("mul"), kExact);
    EXPECT_TENSOR_NEAR(F::div(a, b), fx.tensor("div"), kTol);
  }
}

TEST(Broadcast, LargeAndChunkedShapesAgreeWithAnIndexLoop) {
  // Rows longer than a task chunk, and many short rows split over tasks.
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{
           {{2, 40000}, {1, 40000}}, {{3, 5, 3001}, {5, 1}}, {{40000, 3}, {3}}}) {
    const Tensor a = test::random_tensor(sa, 1), b = test::random_tensor(sb, 2);
    const Tensor y = F::mul(a, b);
    ASSERT_EQ(y.shape(), sa);
    const std::int64_t last = sa.back();
    for (std::int64_t i = 0; i < y.numel(); i += 7) {
      const std::int64_t col = i % last;
      std::int64_t bi = 0;
      if (sb.size() == 2 && sb[0] == 1) bi = col;             // [1, L]
      if (sb.size() == 2 && sb[1] == 1) bi = (i / last) % 5;  // [5, 1] against [3, 5, L]
      if (sb.size() == 1) bi = col;                           // [3]
      ASSERT_EQ(y[i], a[i] * b[bi]) << i;
    }
  }
}

TEST(Broadcast, ZeroDimOperandsBroadcastEverywhere) {
  const Tensor s = Tensor::full({}, 2.0f);
  const Tensor x = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  EXPECT_TENSOR_NEAR(F::div(x, s), Tensor::from_vector({2, 2}, {0.5f, 1, 1.5f, 2}), kExact);
  EXPECT_TENSOR_NEAR(F::sub(s, x), Tensor::from_vector({2, 2}, {1, 0, -1, -2}), kExact);
  const Tensor ss = F::mul(s, s);
  EXPECT_EQ(ss.rank(), 0);
  EXPECT_EQ(ss[0], 4.0f);
}

TEST(Broadcast, RejectsIncompatibleShapes) {
  EXPECT_THAT(test::Call([] {
                (void)F::add(Tensor::zeros({2, 3}), Tensor::zeros({4}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("add: tensors 'input' [2, 3] and 'other' [4] do not broadcast")));
  EXPECT_THAT(test::Call([] { (void)F::div(Tensor(), Tensor::zeros({4})); }),
              ThrowsMessage<ShapeError>(HasSubstr("div")));
}

TEST(Cat, MatchesPyTorch) {
  for (const auto& fx : test::fixtures_in("layers", "cat_")) {
    SCOPED_TRACE(fx.name());
    std::vector<Tensor> parts;
    for (int i = 0; fx.has("t" + std::to_string(i)); ++i)
      parts.push_back(fx.tensor("t" + std::to_string(i)));
    EXPECT_TENSOR_NEAR(F::cat(parts, fx.params()["dim"].get<int>()), fx.tensor("output"), kExact);
  }
}

TEST(Cat, RejectsMismatchedShapes) {
  EXPECT_THAT(test::Call([] {
                (void)F::cat({Tensor::zeros({2, 3}), Tensor::zeros({3, 3})}, 1);
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("cat: tensor 1 [3, 3] must match tensor 0 [2, 3] except in dim 1")));
  EXPECT_THAT(test::Call([] { (void)F::cat({}, 0); }),
              ThrowsMessage<ValueError>(HasSubstr("non-empty")));
  EXPECT_THAT(test::Call([] {
                (void)F::cat({Tensor::zeros({2, 3})}, 2);
              }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "cat: dim 2 out of range for tensor 'input' [2, 3] (expected [-2, 1])")));
}

TEST(Permute, MatchesPyTorch) {
  const auto fx = test::fixture("layers/permute");
  const Tensor x = fx.tensor("input");
  int i = 0;
  for (const auto& p : fx.params()["perms"]) {
    EXPECT_TENSOR_NEAR(F::permute(x, p.get<std::vector<int>>()),
                       fx.tensor("p" + std::to_string(i++)), kExact);
  }
  EXPECT_TENSOR_NEAR(F::transpose(x, 1, -1), fx.tensor("t_1_m1"), kExact);
  EXPECT_TENSOR_NEAR(F::transpose(x, 0, 2), fx.tensor("t_0_2"), kExact);
  const auto fx6 = test::fixture("layers/permute_rank6");
  EXPECT_TENSOR_NEAR(F::permute(fx6.tensor("input"), fx6.params()["perm"].get<std::vector<int>>()),
                     fx6.tensor("output"), kExact);
}

TEST(Permute, RejectsBadDims) {
  const Tensor x = Tensor::zeros({2, 3, 4});
  EXPECT_THAT(test::Call([&] {
                (void)F::permute(x, {0, 1});
              }),
              ThrowsMessage<ValueError>(HasSubstr("permute: dims has 2 entries")));
  EXPECT_THAT(test::Call([&] {
                (void)F::permute(x, {0, 1, -3});
              }),
              ThrowsMessage<ValueError>(HasSubstr("permute: dim 0 appears more than once")));
  EXPECT_THAT(test::Call([&] { (void)F::transpose(x, 0, 3); }),
              ThrowsMessage<ValueError>(HasSubstr("transpose: dim1 3 out of range")));
}

TEST(Reshape, InfersOneDimAndSharesStorage) {
  const Tensor x = test::random_tensor({2, 3, 4}, 3);
  const Tensor y = F::reshape(x, {4, -1});
  EXPECT_EQ(y.shape(), (Shape{4, 6}));
  EXPECT_EQ(y.data(), x.data());
  EXPECT_EQ(F::flatten(x).shape(), (Shape{24}));
  EXPECT_EQ(F::flatten(x, 1).shape(), (Shape{2, 12}));
  EXPECT_EQ(F::flatten(x, 0, -2).shape(), (Shape{6, 4}));
  EXPECT_EQ(F::flatten(x, -2, -2).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(F::flatten(Tensor::full({}, 2.0f)).shape(), (Shape{1}));
  EXPECT_THAT(test::Call([&] {
                (void)F::reshape(x, {-1, -1});
              }),
              ThrowsMessage<ValueError>(HasSubstr("reshape: more than one -1")));
  EXPECT_THAT(test::Call([&] {
                (void)F::reshape(x, {5, -1});
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "reshape: shape [5, -1] is invalid for tensor 'input' [2, 3, 4] of 24")));
  EXPECT_THAT(test::Call([&] { (void)F::flatten(x, 2, 1); }),
              ThrowsMessage<ValueError>(HasSubstr("flatten: start_dim 2 comes after end_dim 1")));
  EXPECT_THAT(test::Call([&] { (void)F::flatten(x, 3); }),
              ThrowsMessage<ValueError>(HasSubstr("flatten: start_dim 3 out of range")));
}

TEST(Indexing, SliceNarrowSelectMatchPyTorch) {
  const auto fx = test::fixture("layers/indexing");
  const Tensor x = fx.tensor("input");
  int i = 0;
  for (const auto& s : fx.params()["slices"]) {
    SCOPED_TRACE("slice " + s.dump());
    EXPECT_TENSOR_NEAR(F::slice(x, s[0].get<int>(), s[1].get<std::int64_t>(),
                                s[2].get<std::int64_t>(), s[3].get<std::int64_t>()),
                       fx.tensor("slice" + std::to_string(i++)), kExact);
  }
  i = 0;
  for (const auto& s : fx.params()["narrows"]) {
    EXPECT_TENSOR_NEAR(
        F::narrow(x, s[0].get<int>(), s[1].get<std::int64_t>(), s[2].get<std::int64_t>()),
        fx.tensor("narrow" + std::to_string(i++)), kExact);
  }
  i = 0;
  for (const auto& s : fx.params()["selects"]) {
    EXPECT_TENSOR_NEAR(F::select(x, s[0].get<int>(), s[1].get<std::int64_t>()),
                       fx.tensor("select" + std::to_string(i++)), kExact);
  }
  EXPECT_TENSOR_NEAR(F::slice(x, 1), x, kExact);  // x[:, :] copies everything
}

TEST(Indexing, RejectsOutOfRange) {
  const Tensor x = Tensor::zeros({3, 7});
  EXPECT_THAT(
      test::Call([&] { (void)F::select(x, 1, 7); }),
      ThrowsMessage<ValueError>(HasSubstr("select: index 7 out of range for dim 1 of size 7")));
  EXPECT_THAT(test::Call([&] { (void)F::select(x, 0, -4); }),
              ThrowsMessage<ValueError>(HasSubstr("index -4")));
  EXPECT_THAT(test::Call([&] { (void)F::narrow(x, 1, 5, 3); }),
              ThrowsMessage<ValueError>(HasSubstr("narrow: start (5) + length (3) exceeds dim 1")));
  EXPECT_THAT(test::Call([&] { (void)F::narrow(x, 1, -8, 1); }),
              ThrowsMessage<ValueError>(HasSubstr("narrow: start -8 out of range")));
  EXPECT_THAT(test::Call([&] { (void)F::slice(x, 0, 0, 3, 0); }),
              ThrowsMessage<ValueError>(HasSubstr("slice: step must be positive")));
  EXPECT_THAT(test::Call([&] { (void)F::slice(x, -3); }),
              ThrowsMessage<ValueError>(HasSubstr("slice: dim -3 out of range")));
}

TEST(Reduce, MeanAndAmaxMatchPyTorch) {
  const auto fx = test::fixture("layers/reduce");
  const Tensor x = fx.tensor("input");
  int i = 0;
  for (const auto& ds : fx.params()["dimsets"]) {
    const auto dims = ds.get<std::vector<int>>();
    for (const bool keep : {false, true}) {
      const std::string tag = std::to_string(i) + (keep ? "_k" : "_n");
      SCOPED_TRACE(ds.dump() + tag);
      Tensor mean = F::mean(x, dims, keep), amax = F::amax(x, dims, keep);
      if (mean.rank() == 0) {
        // A full reduction is 0-d; the fixture writer stores 0-d arrays as [1].
        mean = mean.reshape({1});
        amax = amax.reshape({1});
      }
      EXPECT_TENSOR_NEAR(mean, fx.tensor("mean" + tag), kTol);
      EXPECT_TENSOR_NEAR(amax, fx.tensor("amax" + tag), kExact);
    }
    ++i;
  }
  const auto fl = test::fixture("layers/reduce_long");
  EXPECT_TENSOR_NEAR(F::mean(fl.tensor("input"), {1}), fl.tensor("mean"), kTol);
  EXPECT_TENSOR_NEAR(F::amax(fl.tensor("input"), {-1}), fl.tensor("amax"), kExact);
}

TEST(Reduce, EmptyDimsAndErrors) {
  const Tensor e = Tensor::zeros({2, 0});
  const Tensor m = F::mean(e, {1});
  ASSERT_EQ(m.shape(), (Shape{2}));
  EXPECT_TRUE(std::isnan(m[0]));
  EXPECT_THAT(test::Call([&] { (void)F::amax(e, {1}); }),
              ThrowsMessage<ValueError>(HasSubstr("amax: cannot reduce over a dim of size 0")));
  EXPECT_THAT(test::Call([] {
                (void)F::mean(Tensor::zeros({2, 3}), {1, -1});
              }),
              ThrowsMessage<ValueError>(HasSubstr("mean: dim 1 appears more than once")));
  EXPECT_THAT(test::Call([] {
                (void)F::mean(Tensor::zeros({2, 3}), {2});
              }),
              ThrowsMessage<ValueError>(HasSubstr("mean: dim 2 out of range")));
}

TEST(Pad, EveryModeMatchesPyTorch) {
  const auto fx = test::fixture("layers/pad4d");
  const Tensor x = fx.tensor("input");
  int i = 0;
  for (const auto& p : fx.params()["pads"]) {
    SCOPED_TRACE(p.dump());
    const Tensor y = F::pad(x, p[1].get<std::vector<std::int64_t>>(),
                            parse_pad_mode(p[0].get<std::string>()), p[2].get<float>());
    EXPECT_TENSOR_NEAR(y, fx.tensor("pad" + std::to_string(i++)), kExact);
  }
  const auto fo = test::fixture("layers/pad_other_ranks");
  const Tensor x3 = fo.tensor("input3"), x5 = fo.tensor("input5");
  EXPECT_TENSOR_NEAR(F::pad(x3, {3, 2}, PadMode::reflect), fo.tensor("reflect3"), kExact);
  EXPECT_TENSOR_NEAR(F::pad(x3, {2, 7}, PadMode::circular), fo.tensor("circular3"), kExact);
  EXPECT_TENSOR_NEAR(F::pad(x5, {1, 1, 2, 0, 1, 2}, PadMode::replicate), fo.tensor("replicate5"),
                     kExact);
  EXPECT_TENSOR_NEAR(F::pad(x5, {1, 2, 1, 0, 2, 1}, PadMode::reflect), fo.tensor("reflect5"),
                     kExact);
  EXPECT_TENSOR_NEAR(F::pad(x3, {1, 2, 2, 1}, PadMode::reflect), fo.tensor("reflect_nobatch"),
                     kExact);
}

TEST(Pad, RejectsWhatPyTorchRejects) {
  const Tensor x = Tensor::zeros({2, 3, 5, 4});
  EXPECT_THAT(test::Call([&] { (void)F::pad(x, {1}); }),
              ThrowsMessage<ValueError>(HasSubstr("pad: pads has 1 entries")));
  EXPECT_THAT(test::Call([&] {
                (void)F::pad(x, {4, 0}, PadMode::reflect);
              }),
              ThrowsMessage<ValueError>(
                  HasSubstr("pad: reflect padding of 1 dims expects a tensor of rank 2 or 3")));
  EXPECT_THAT(test::Call([&] {
                (void)F::pad(x, {4, 0, 0, 0}, PadMode::reflect);
              }),
              ThrowsMessage<ValueError>(
                  HasSubstr("reflect pads (4, 0) must be non-negative and less than dim 3")));
  EXPECT_THAT(test::Call([&] {
                (void)F::pad(x, {5, 0, 0, 0}, PadMode::circular);
              }),
              ThrowsMessage<ValueError>(HasSubstr("wrap around more than once")));
  EXPECT_THAT(test::Call([&] {
                (void)F::pad(x, {-3, -2});
              }),
              ThrowsMessage<ValueError>(HasSubstr("leave a negative size")));
  EXPECT_THAT(test::Call([] { (void)parse_pad_mode("zeros"); }),
              ThrowsMessage<ValueError>(HasSubstr("pad: unknown mode 'zeros'")));
}

TEST(TensorOps, AreThreadSafe) {
  const Tensor a = test::random_tensor({4, 64, 9, 7}, 5), b = test::random_tensor({64, 1, 1}, 6);
  const Tensor ref = F::add(F::permute(a, {0, 2, 3, 1}), F::permute(b, {1, 2, 0}));
  std::vector<Tensor> out(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      out[t] = F::add(F::permute(a, {0, 2, 3, 1}), F::permute(b, {1, 2, 0}));
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& o : out) EXPECT_TENSOR_NEAR(o, ref, kExact);
}

}  // namespace
}  // namespace cvattn
