// The fast paths of functional/tensor_ops.cpp that the speed work added, on the shapes that take
// them (and on the thread counts that decide whether they are taken), against each op's
// definition written out as index loops: permute as a batch of register-blocked transposes,
// mean over one contiguous block through the plane reduction, mean over a middle dim through the
// dispatched column sums, the broadcasting binary ops through the dispatched rows, and
// scale_nearest's spread gate (chunks of rows, and rows too long for its buffer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cvattn/functional/gates.hpp"
#include "cvattn/functional/tensor_ops.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = functional;

TEST(SpeedPaths, PermuteNchwToNhwcAndBackIsATransposeOfEachImage) {
  // Odd sizes: the transpose's blocks and its remainders; N = 3 images, so both thread counts
  // take the transpose path, and N = 1 (the strided copy) for the other branch.
  for (const std::int64_t n : {1, 3}) {
    const Tensor x = test::random_tensor({n, 13, 7, 11}, 11);
    for (const int threads : {1, 2}) {
      const test::ThreadScope scope(threads);
      const Tensor y = F::permute(x, {0, 2, 3, 1});
      ASSERT_EQ(y.shape(), (Shape{n, 7, 11, 13}));
      Tensor want = Tensor::empty({n, 7, 11, 13});
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t c = 0; c < 13; ++c)
          for (std::int64_t h = 0; h < 7; ++h)
            for (std::int64_t w = 0; w < 11; ++w)
              want[((b * 7 + h) * 11 + w) * 13 + c] = x[((b * 13 + c) * 7 + h) * 11 + w];
      EXPECT_TENSOR_NEAR(y, want, test::Tolerance({0.0, 0.0}));
      EXPECT_TENSOR_NEAR(F::permute(y, {0, 3, 1, 2}), x, test::Tolerance({0.0, 0.0}));
    }
  }
}

TEST(SpeedPaths, MeanOverHwAndOverTokens) {
  const Tensor x = test::random_tensor({3, 5, 9, 37}, 12, -2.0f, 3.0f);
  Tensor hw = Tensor::empty({3, 5});
  for (std::int64_t p = 0; p < 15; ++p) {
    double s = 0.0;
    for (std::int64_t i = 0; i < 9 * 37; ++i) s += x[p * 9 * 37 + i];
    hw[p] = static_cast<float>(s / (9 * 37));
  }
  // Over dim 1 of [N, T, D] with T past one block of rows and D past the vector groups.
  const Tensor t = test::random_tensor({2, 131, 77}, 13, -2.0f, 3.0f);
  Tensor tok = Tensor::empty({2, 77});
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t d = 0; d < 77; ++d) {
      double s = 0.0;
      for (std::int64_t k = 0; k < 131; ++k) s += t[(b * 131 + k) * 77 + d];
      tok[b * 77 + d] = static_cast<float>(s / 131);
    }
  }
  for (const int threads : {1, 2}) {
    const test::ThreadScope scope(threads);
    EXPECT_TENSOR_NEAR(F::mean(x, {2, 3}), hw, test::Tolerance{});
    EXPECT_TENSOR_NEAR(F::mean(t, {1}), tok, test::Tolerance{});
  }
}

TEST(SpeedPaths, BroadcastingBinaryOps) {
  const Tensor a = test::random_tensor({2, 6, 5, 19}, 14);
  const Tensor bias = test::random_tensor({1, 6, 1, 1}, 15, 0.5f, 2.0f);
  const Tensor row = test::random_tensor({19}, 16, 0.5f, 2.0f);
  const Tensor same = test::random_tensor({2, 6, 5, 19}, 17, 0.5f, 2.0f);
  Tensor want_bias[4], want_row[4], want_same[4];
  for (auto* w : {want_bias, want_row, want_same}) {
    for (int k = 0; k < 4; ++k) w[k] = Tensor::empty(a.shape());
  }
  const auto apply = [](int k, float u, float v) {
    return k == 0 ? u + v : k == 1 ? u - v : k == 2 ? u * v : u / v;
  };
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const std::int64_t c = (i / (5 * 19)) % 6, w = i % 19;
    for (int k = 0; k < 4; ++k) {
      want_bias[k][i] = apply(k, a[i], bias[c]);
      want_row[k][i] = apply(k, row[w], a[i]);  // the broadcast operand first
      want_same[k][i] = apply(k, a[i], same[i]);
    }
  }
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  const Op ops[4] = {&F::add, &F::sub, &F::mul, &F::div};
  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE(k);
    EXPECT_TENSOR_NEAR(ops[k](a, bias), want_bias[k], test::Tolerance({0.0, 0.0}));
    EXPECT_TENSOR_NEAR(ops[k](row, a), want_row[k], test::Tolerance({0.0, 0.0}));
    EXPECT_TENSOR_NEAR(ops[k](a, same), want_same[k], test::Tolerance({0.0, 0.0}));
  }
}

TEST(SpeedPaths, ScaleNearestIsXTimesTheNearestUpsampledGate) {
  // 100 x 70 takes two chunks of the 4096-float buffer, 3 x 4100 the plain loop, 9 x 6 from a
  // 3 x 2 gate the uneven index mapping; PyTorch's nearest rule: floor(o * in / out).
  const Shape shapes[][2] = {{{2, 3, 100, 70}, {2, 3, 7, 9}},
                             {{1, 2, 3, 4100}, {1, 2, 2, 5}},
                             {{2, 4, 9, 6}, {2, 4, 3, 2}},
                             {{1, 1, 1, 1}, {1, 1, 1, 1}}};
  for (const auto& shape : shapes) {
    const Shape& xs = shape[0];
    const Shape& gs = shape[1];
    const Tensor x = test::random_tensor(xs, 21);
    const Tensor g = test::random_tensor(gs, 22);
    for (const int threads : {1, 2}) {
      const test::ThreadScope scope(threads);
      const Tensor y = F::scale_nearest(x, g);
      Tensor want = Tensor::empty(xs);
      const float sh = static_cast<float>(gs[2]) / static_cast<float>(xs[2]);
      const float sw = static_cast<float>(gs[3]) / static_cast<float>(xs[3]);
      for (std::int64_t p = 0; p < xs[0] * xs[1]; ++p)
        for (std::int64_t oy = 0; oy < xs[2]; ++oy)
          for (std::int64_t ox = 0; ox < xs[3]; ++ox) {
            const auto iy = std::min(static_cast<std::int64_t>(std::floor(oy * sh)), gs[2] - 1);
            const auto ix = std::min(static_cast<std::int64_t>(std::floor(ox * sw)), gs[3] - 1);
            const std::int64_t i = (p * xs[2] + oy) * xs[3] + ox;
            want[i] = x[i] * g[(p * gs[2] + iy) * gs[3] + ix];
          }
      EXPECT_TENSOR_NEAR(y, want, test::Tolerance({0.0, 0.0}));
    }
  }
}

}  // namespace
}  // namespace cvattn
