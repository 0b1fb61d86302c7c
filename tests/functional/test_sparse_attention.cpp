// Local (windowed) attention and top-k sparse attention with exact and FLANN key search.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/sparse_attention.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace F = cvattn::functional;
using cvattn::Shape;
using cvattn::Tensor;
using cvattn::test::Tolerance;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

std::vector<cvattn::test::Fixture> cases(const std::string& prefix) {
  return cvattn::test::fixtures_in("attention", prefix);
}

// Keys scattered around a few centres, queries near them: the structure ANN search exploits.
void clustered(std::int64_t B, std::int64_t L, std::int64_t S, std::int64_t E, Tensor& q,
               Tensor& k) {
  const Tensor centres = cvattn::test::random_tensor({16, E}, 77, -2, 2);
  cvattn::test::Random rng(78);
  k = Tensor::empty({B, S, E});
  q = Tensor::empty({B, L, E});
  for (std::int64_t i = 0; i < B * S; ++i) {
    const auto c = static_cast<std::int64_t>(rng.next() % 16);
    for (std::int64_t e = 0; e < E; ++e)
      k[i * E + e] = centres[c * E + e] + rng.uniform(-0.5f, 0.5f);
  }
  for (std::int64_t i = 0; i < B * L; ++i) {
    const auto c = static_cast<std::int64_t>(rng.next() % 16);
    for (std::int64_t e = 0; e < E; ++e)
      q[i * E + e] = centres[c * E + e] + rng.uniform(-0.5f, 0.5f);
  }
}

double recall(const F::KeySelection& approx, const F::KeySelection& exact) {
  const auto k = exact.shape[2];
  std::int64_t hit = 0;
  for (std::size_t row = 0; row < exact.indices.size() / static_cast<std::size_t>(k); ++row) {
    std::set<std::int32_t> truth(exact.indices.begin() + row * k,
                                 exact.indices.begin() + (row + 1) * k);
    for (std::int64_t i = 0; i < k; ++i) hit += truth.count(approx.indices[row * k + i]);
  }
  return static_cast<double>(hit) / static_cast<double>(exact.indices.size());
}

void expect_valid_rows(const F::KeySelection& sel, std::int64_t S) {
  const auto k = sel.shape[2];
  for (std::size_t row = 0; row < sel.indices.size() / static_cast<std::size_t>(k); ++row) {
    std::set<std::int32_t> seen;
    for (std::int64_t i = 0; i < k; ++i) {
      const auto j = sel.indices[row * k + i];
      ASSERT_TRUE(j >= 0 && j < S) << "row " << row;
      EXPECT_TRUE(seen.insert(j).second) << "duplicate in row " << row;
    }
  }
}

}  // namespace

TEST(LocalAttention, MatchesUnfoldReference) {
  const auto all = cases("local_");
  EXPECT_EQ(all.size(), 5u);
  for (const auto& fx : all) {
    SCOPED_TRACE(fx.name());
    std::optional<double> scale;
    if (fx.params().contains("scale")) scale = fx.params()["scale"].get<double>();
    const auto r = F::local_attention(fx.tensor("q"), fx.tensor("k"), fx.tensor("v"),
                                      fx.params()["radius"].get<std::int64_t>(), scale);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), Tolerance{});
  }
}

TEST(LocalAttention, OutsideSlotsAreZeroAndTheRestSumToOne) {
  const Tensor q = cvattn::test::random_tensor({1, 5, 6, 7}, 1);
  const Tensor k = cvattn::test::random_tensor({1, 5, 6, 7}, 2);
  const Tensor v = cvattn::test::random_tensor({1, 2, 6, 7}, 3);
  const auto r = F::local_attention(q, k, v, 2);
  ASSERT_EQ(r.attn_weights.shape(), (Shape{1, 6, 7, 25}));
  for (std::int64_t y = 0; y < 6; ++y) {
    for (std::int64_t x = 0; x < 7; ++x) {
      double sum = 0;
      for (std::int64_t s = 0; s < 25; ++s) {
        const std::int64_t dy = s / 5 - 2, dx = s % 5 - 2;
        const float w = r.attn_weights[((y * 7) + x) * 25 + s];
        const bool inside = y + dy >= 0 && y + dy < 6 && x + dx >= 0 && x + dx < 7;
        if (inside) {
          EXPECT_GT(w, 0.0f);
        } else {
          EXPECT_EQ(w, 0.0f);
        }
        sum += w;
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  }
}

TEST(LocalAttention, RadiusZeroReturnsTheValues) {
  const Tensor q = cvattn::test::random_tensor({2, 3, 4, 5}, 1);
  const Tensor v = cvattn::test::random_tensor({2, 4, 4, 5}, 3);
  const auto r = F::local_attention(q, q, v, 0);
  EXPECT_TENSOR_NEAR(r.output, v, (Tolerance{1e-7, 1e-6}));
}

TEST(LocalAttention, SameResultOnOneAndTwoThreads) {
  const Tensor q = cvattn::test::random_tensor({2, 8, 9, 11}, 1);
  const Tensor k = cvattn::test::random_tensor({2, 8, 9, 11}, 2);
  const Tensor v = cvattn::test::random_tensor({2, 5, 9, 11}, 3);
  cvattn::test::expect_same_on_one_and_two_threads([&] {
    const auto r = F::local_attention(q, k, v, 2);
    return std::vector<Tensor>{r.output, r.attn_weights};
  });
}

TEST(LocalAttention, RejectsBadInput) {
  const Tensor q = Tensor::zeros({1, 4, 5, 6});
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::local_attention(q, Tensor::zeros({1, 4, 5, 7}), q, 1);
              }),
              ThrowsMessage<cvattn::ShapeError>(HasSubstr(
                  "local_attention: tensor 'k' expected shape [1, 4, 5, 6], got [1, 4, 5, 7]")));
  EXPECT_THAT(
      cvattn::test::Call([&] {
        (void)F::local_attention(q, q, Tensor::zeros({1, 2, 5, 5}), 1);
      }),
      ThrowsMessage<cvattn::ShapeError>(HasSubstr("tensor 'v' expected shape [1, *, 5, 6]")));
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::local_attention(q, q, q, -1); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("radius must be in [0, 1024], got -1")));
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::local_attention(q, q, q, 1, std::nan("")); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("scale must be finite")));
}

TEST(SparseAttention, ExactTopKMatchesPyTorch) {
  const auto all = cases("topk_");
  EXPECT_EQ(all.size(), 3u);
  for (const auto& fx : all) {
    SCOPED_TRACE(fx.name());
    std::optional<double> scale;
    if (fx.params().contains("scale")) scale = fx.params()["scale"].get<double>();
    const auto top_k = fx.params()["top_k"].get<std::int64_t>();
    F::KeySelection sel;
    const auto r = F::sparse_attention(fx.tensor("q"), fx.tensor("k"), fx.tensor("v"),
                                       F::KeySearchOptions().top_k(top_k), scale, &sel);
    const Tensor idx = fx.tensor("indices");
    ASSERT_EQ(static_cast<std::int64_t>(sel.indices.size()), idx.numel());
    for (std::int64_t i = 0; i < idx.numel(); ++i) EXPECT_EQ(sel.indices[i], idx[i]) << i;
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), Tolerance{});
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
  }
}

TEST(SparseAttention, AllKeysEqualsDenseAttention) {
  const Tensor q = cvattn::test::random_tensor({2, 7, 6}, 1);
  const Tensor k = cvattn::test::random_tensor({2, 11, 6}, 2);
  const Tensor v = cvattn::test::random_tensor({2, 11, 4}, 3);
  const auto sparse = F::sparse_attention(q, k, v, F::KeySearchOptions().top_k(11));
  const auto dense = F::scaled_dot_product_attention(q, k, v);
  EXPECT_TENSOR_NEAR(sparse.output, dense.output, (Tolerance{1e-5, 1e-5}));
}

TEST(SparseAttention, KdTreeWithUnlimitedChecksIsExact) {
  Tensor q, k;
  clustered(2, 40, 300, 16, q, k);
  const auto exact = F::select_keys(q, k, F::KeySearchOptions().top_k(8));
  const auto tree =
      F::select_keys(q, k, F::KeySearchOptions().top_k(8).method(F::KeySearch::kdtree).checks(-1));
  expect_valid_rows(tree, 300);
  EXPECT_EQ(recall(tree, exact), 1.0);
}

TEST(SparseAttention, ApproximateSearchFindsMostTrueNeighbours) {
  Tensor q, k;
  clustered(1, 200, 1500, 32, q, k);
  const auto exact = F::select_keys(q, k, F::KeySearchOptions().top_k(16));
  const auto tree = F::select_keys(
      q, k, F::KeySearchOptions().top_k(16).method(F::KeySearch::kdtree).checks(512));
  const auto lsh = F::select_keys(q, k, F::KeySearchOptions().top_k(16).method(F::KeySearch::lsh));
  expect_valid_rows(tree, 1500);
  expect_valid_rows(lsh, 1500);
  EXPECT_GT(recall(tree, exact), 0.8);
  EXPECT_GT(recall(lsh, exact), 0.5);
  // Rows come sorted by decreasing q.k, like the exact ones.
  for (std::int64_t row = 0; row < 200; ++row) {
    for (std::int64_t i = 1; i < 16; ++i) {
      auto dot = [&](std::int32_t j) {
        double s = 0;
        for (int e = 0; e < 32; ++e) s += double(q[row * 32 + e]) * k[j * 32 + e];
        return s;
      };
      EXPECT_GE(dot(lsh.indices[row * 16 + i - 1]) + 1e-4, dot(lsh.indices[row * 16 + i]));
    }
  }
}

TEST(SparseAttention, LshFallsBackToExactWhenTooFewCandidates) {
  Tensor q, k;
  clustered(1, 20, 100, 8, q, k);
  // One short table with 24-bit keys: most queries find fewer than top_k candidates.
  const auto sel = F::select_keys(q, k,
                                  F::KeySearchOptions()
                                      .top_k(10)
                                      .method(F::KeySearch::lsh)
                                      .table_number(1)
                                      .key_size(24)
                                      .multi_probe_level(0)
                                      .candidates(10));
  expect_valid_rows(sel, 100);
  const auto exact = F::select_keys(q, k, F::KeySearchOptions().top_k(10));
  EXPECT_GT(recall(sel, exact), 0.5);
}

TEST(SparseAttention, RejectsBadInput) {
  const Tensor q = Tensor::zeros({1, 4, 8}), k = Tensor::zeros({1, 6, 8}),
               v = Tensor::zeros({1, 6, 3});
  using cvattn::ShapeError;
  using cvattn::ValueError;
  EXPECT_THAT(
      cvattn::test::Call([&] { (void)F::select_keys(q, k, F::KeySearchOptions().top_k(7)); }),
      ThrowsMessage<ValueError>(HasSubstr("select_keys: top_k must be in [1, 6]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::select_keys(q, Tensor::zeros({1, 6, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'k' expected shape [1, *, 8]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::select_keys(
                    q, k, F::KeySearchOptions().top_k(2).method(F::KeySearch::lsh).bits(12));
              }),
              ThrowsMessage<ValueError>(HasSubstr("bits must be a multiple of 8")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::select_keys(
                    q, k, F::KeySearchOptions().top_k(2).method(F::KeySearch::kdtree).trees(0));
              }),
              ThrowsMessage<ValueError>(HasSubstr("trees must be in [1, 64]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::sparse_attention(q, k, v, F::KeySearchOptions().top_k(2), -1.0);
              }),
              ThrowsMessage<ValueError>(HasSubstr("scale must be positive")));
  F::KeySelection bad{{1, 4, 2}, std::vector<std::int32_t>(8, 6)};
  EXPECT_THAT(
      cvattn::test::Call([&] { (void)F::attend_selected(q, k, v, bad); }),
      ThrowsMessage<ValueError>(HasSubstr("selection index 6 at position 0 is outside [0, 6)")));
  F::KeySelection wrong{{1, 3, 2}, std::vector<std::int32_t>(6, 0)};
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::attend_selected(q, k, v, wrong); }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("selection expected shape [1, 4, top_k >= 1], got [1, 3, 2]")));
  EXPECT_THAT(cvattn::test::Call([] { (void)F::parse_key_search("annoy"); }),
              ThrowsMessage<ValueError>(HasSubstr("unknown method 'annoy'")));
}
