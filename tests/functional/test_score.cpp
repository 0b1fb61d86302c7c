// Score functions (dot, scaled_dot, general, additive, cosine) and normalisers (softmax, hard,
// top-k) against PyTorch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/score.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;
using cvattn::test::Tolerance;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

F::ScoreParams params_of(const cvattn::test::Fixture& fx) {
  F::ScoreParams p;
  if (fx.has("weight")) p.weight = fx.tensor("weight");
  if (fx.has("query_weight")) p.query_weight = fx.tensor("query_weight");
  if (fx.has("key_weight")) p.key_weight = fx.tensor("key_weight");
  if (fx.has("vector")) p.vector = fx.tensor("vector");
  if (fx.params().contains("scale")) p.scale = fx.params()["scale"].get<double>();
  return p;
}

}  // namespace

TEST(Attend, MatchesPyTorchForEveryScoreAndNormalizer) {
  int count = 0;
  for (const auto& fx : cvattn::test::fixtures_in("attention")) {
    if (fx.name().rfind("score_", 0) != 0) continue;
    SCOPED_TRACE(fx.name());
    ++count;
    const auto score = F::parse_score(fx.params()["score"].get<std::string>());
    const auto norm = F::parse_normalizer(fx.params()["normalizer"].get<std::string>());
    const auto top_k = fx.params()["top_k"].get<std::int64_t>();
    const auto params = params_of(fx);
    const Tensor s = F::attention_scores(fx.tensor("q"), fx.tensor("k"), score, params);
    EXPECT_TENSOR_NEAR(s, fx.tensor("scores"), Tolerance{});
    const auto r =
        F::attend(fx.tensor("q"), fx.tensor("k"), fx.tensor("v"), score, norm, params, top_k);
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), Tolerance{});
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
  }
  EXPECT_EQ(count, 16);
}

// Scores over the whole tanh range, saturated arguments included, against double precision.
TEST(AttentionScores, AdditiveMatchesDoubleReferenceAcrossTheTanhRange) {
  const Tensor q = cvattn::test::random_tensor({2, 9, 5}, 1, -4, 4);
  const Tensor k = cvattn::test::random_tensor({2, 11, 3}, 2, -4, 4);
  F::ScoreParams p;
  p.query_weight = cvattn::test::random_tensor({13, 5}, 3, -2, 2);
  p.key_weight = cvattn::test::random_tensor({13, 3}, 4, -2, 2);
  p.vector = cvattn::test::random_tensor({13}, 5);
  const Tensor s = F::attention_scores(q, k, F::Score::additive, p);
  Tensor expected = Tensor::empty({2, 9, 11});
  for (int b = 0; b < 2; ++b) {
    for (int l = 0; l < 9; ++l) {
      for (int j = 0; j < 11; ++j) {
        double acc = 0;
        for (int a = 0; a < 13; ++a) {
          double t = 0;
          for (int e = 0; e < 5; ++e)
            t += double(p.query_weight[a * 5 + e]) * q[(b * 9 + l) * 5 + e];
          for (int e = 0; e < 3; ++e)
            t += double(p.key_weight[a * 3 + e]) * k[(b * 11 + j) * 3 + e];
          acc += p.vector[a] * std::tanh(t);
        }
        expected[(b * 9 + l) * 11 + j] = static_cast<float>(acc);
      }
    }
  }
  EXPECT_TENSOR_NEAR(s, expected, Tolerance{});
}

TEST(NormalizeScores, HardBreaksTiesTowardsTheLowestIndex) {
  const Tensor s = Tensor::from_vector({2, 4}, {1, 3, 3, 0, 5, 5, 5, 5});
  const Tensor w = F::normalize_scores(s, F::Normalizer::hard);
  EXPECT_TENSOR_NEAR(w, Tensor::from_vector({2, 4}, {0, 1, 0, 0, 1, 0, 0, 0}), (Tolerance{0, 0}));
}

TEST(NormalizeScores, TopKKeepsTheLargestAndRenormalises) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Row 0: ties at the cut (2, 2, 2) keep the lower indices. Row 1: NaN ranks last.
  const Tensor s = Tensor::from_vector({2, 5}, {2, 1, 2, 2, 0, nan, 0, 3, 1, 2});
  const Tensor w = F::normalize_scores(s, F::Normalizer::topk, 2);
  const float half = 0.5f;
  const float a = 1.0f / (1.0f + std::exp(-1.0f));  // softmax([3, 2])
  EXPECT_TENSOR_NEAR(w, Tensor::from_vector({2, 5}, {half, 0, half, 0, 0, 0, 0, a, 0, 1 - a}),
                     (Tolerance{1e-6, 1e-6}));
}

TEST(NormalizeScores, SoftmaxRowsSumToOne) {
  const Tensor s = cvattn::test::random_tensor({3, 7, 19}, 5, -10, 10);
  const Tensor w = F::normalize_scores(s, F::Normalizer::softmax);
  for (std::int64_t r = 0; r < 21; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < 19; ++j) sum += w[r * 19 + j];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TEST(AttentionScores, RejectsBadInput) {
  const Tensor q = Tensor::zeros({2, 5, 6}), k = Tensor::zeros({2, 7, 6});
  using cvattn::ShapeError;
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::attention_scores(q, Tensor::zeros({2, 7, 4}), F::Score::dot);
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "attention_scores: tensor 'k' expected [2, *, 6] (score 'dot' needs the E of "
                  "'q' [2, 5, 6]), got [2, 7, 4]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::attention_scores(q, Tensor::zeros({3, 7, 6}), F::Score::dot);
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'k' expected [2, *, *]")));
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::attention_scores(q, k, F::Score::general); }),
              ThrowsMessage<ShapeError>(HasSubstr("'weight'")));
  F::ScoreParams p;
  p.weight = Tensor::zeros({6, 5});
  EXPECT_THAT(
      cvattn::test::Call([&] { (void)F::attention_scores(q, k, F::Score::general, p); }),
      ThrowsMessage<ShapeError>(HasSubstr("tensor 'weight' expected shape [6, 6], got [6, 5]")));
  F::ScoreParams a;
  a.query_weight = Tensor::zeros({4, 6});
  a.key_weight = Tensor::zeros({4, 6});
  a.vector = Tensor::zeros({5});
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::attention_scores(q, k, F::Score::additive, a); }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'vector' expected shape [4], got [5]")));
  F::ScoreParams c;
  c.eps = -1;
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::attention_scores(q, k, F::Score::cosine, c); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("eps must be finite and non-negative")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::normalize_scores(Tensor::zeros({2, 3}), F::Normalizer::topk, 4);
              }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("top_k must be in [1, 3]")));
  EXPECT_THAT(
      cvattn::test::Call([&] {
        (void)F::attend(q, k, Tensor::zeros({2, 6, 3}), F::Score::dot, F::Normalizer::softmax);
      }),
      ThrowsMessage<ShapeError>(HasSubstr("tensor 'v' expected shape [2, 7, *]")));
}

TEST(ParseScore, Words) {
  EXPECT_EQ(F::parse_score("additive"), F::Score::additive);
  EXPECT_EQ(F::parse_score("scaled_dot"), F::Score::scaled_dot);
  EXPECT_EQ(F::parse_normalizer("topk"), F::Normalizer::topk);
  EXPECT_THAT(cvattn::test::Call([] { (void)F::parse_score("bilinear"); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("unknown score 'bilinear'")));
  EXPECT_THAT(cvattn::test::Call([] { (void)F::parse_normalizer("sparsemax"); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("unknown normalizer 'sparsemax'")));
}
