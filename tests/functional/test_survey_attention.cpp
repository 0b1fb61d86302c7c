#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/survey_attention.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

F::ScoreParams params_of(const test::Fixture& fx) {
  F::ScoreParams p;
  if (fx.has("weight")) p.weight = fx.tensor("weight");
  if (fx.has("query_weight")) {
    p.query_weight = fx.tensor("query_weight");
    p.key_weight = fx.tensor("key_weight");
    p.vector = fx.tensor("vector");
  }
  return p;
}

TEST(ThresholdedAttention, MatchesTorchReference) {
  int count = 0;
  for (const auto& fx : test::fixtures_in("spatial", "survey_threshold_")) {
    ++count;
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const F::AttentionResult r = F::attend_thresholded(
        fx.tensor("q"), fx.tensor("k"), fx.tensor("v"),
        F::parse_score(p["score"].get<std::string>()), p["tau"].get<double>(), params_of(fx));
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  }
  EXPECT_GE(count, 4);
}

TEST(ThresholdedAttention, RenormalisesAndFallsBackToTheLowestArgmax) {
  // softmax of (0, 0, ln 2, ln 2) is (1/6, 1/6, 1/3, 1/3).
  const float l2 = std::log(2.0f);
  const Tensor s = Tensor::from_vector({2, 4}, {0, 0, l2, l2, 0, 0, l2, l2});
  const Tensor keep = F::threshold_weights(s.slice0(0, 1), 0.2);
  EXPECT_NEAR(keep[0], 0.0f, 1e-7f);
  EXPECT_NEAR(keep[2], 0.5f, 1e-6f);
  EXPECT_NEAR(keep[3], 0.5f, 1e-6f);
  // Nothing reaches 0.5: the first of the two maxima alone.
  const Tensor fallback = F::threshold_weights(s, 0.5);
  EXPECT_EQ(fallback[2], 1.0f);
  EXPECT_EQ(fallback[3], 0.0f);
  EXPECT_EQ(fallback[6], 1.0f);
  EXPECT_THAT(test::Call([&] { (void)F::threshold_weights(s, std::nan("")); }),
              ThrowsMessage<ValueError>(HasSubstr("tau must be finite")));
}

TEST(LuongLocalAttention, MatchesTorchReference) {
  int count = 0;
  for (const auto& fx : test::fixtures_in("spatial", "survey_local_")) {
    ++count;
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    F::LuongLocalOptions o;
    o.alignment(F::parse_local_alignment(p["alignment"].get<std::string>()))
        .window(p["window"].get<std::int64_t>());
    if (fx.has("position_weight")) {
      o.position_weight(fx.tensor("position_weight")).position_vector(fx.tensor("position_vector"));
    }
    Tensor positions;
    const F::AttentionResult r = F::luong_local_attention(
        fx.tensor("q"), fx.tensor("k"), fx.tensor("v"),
        F::parse_score(p["score"].get<std::string>()), o, params_of(fx), &positions);
    EXPECT_TENSOR_NEAR(positions, fx.tensor("positions"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  }
  EXPECT_GE(count, 4);
}

TEST(LuongLocalAttention, RejectsBadSettings) {
  const Tensor q = Tensor::zeros({1, 3, 4}), k = Tensor::zeros({1, 5, 4});
  EXPECT_THAT(test::Call([&] {
                (void)F::luong_local_attention(q, k, k, F::Score::dot,
                                               F::LuongLocalOptions().window(0));
              }),
              ThrowsMessage<ValueError>(HasSubstr("window D must be >= 1")));
  EXPECT_THAT(test::Call([&] {
                (void)F::luong_local_attention(
                    q, k, k, F::Score::dot,
                    F::LuongLocalOptions().alignment(F::LocalAlignment::predictive));
              }),
              ThrowsMessage<ValueError>(HasSubstr("local-p needs position_weight")));
  EXPECT_THAT(test::Call([] { (void)F::parse_local_alignment("local-x"); }),
              ThrowsMessage<ValueError>(HasSubstr("local-m")));
}

TEST(StochasticHardAttention, DrawsAreOneHotAndSeeded) {
  const auto fx = test::fixture("spatial/survey_stochastic_dot_soft_reference");
  const Tensor q = fx.tensor("q"), k = fx.tensor("k"), v = fx.tensor("v");
  const F::AttentionResult one =
      F::attend_stochastic(q, k, v, F::Score::dot, F::StochasticOptions().seed(7));
  const Tensor& w = one.attn_weights;
  const std::int64_t S = w.dim(-1);
  for (std::int64_t r = 0; r < w.numel() / S; ++r) {
    int ones = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      EXPECT_TRUE(w[r * S + j] == 0.0f || w[r * S + j] == 1.0f);
      ones += w[r * S + j] == 1.0f;
    }
    EXPECT_EQ(ones, 1);
  }
  // The output is the value of the drawn key.
  const std::int64_t L = q.dim(1), Ev = v.dim(2);
  for (std::int64_t r = 0; r < w.numel() / S; ++r) {
    std::int64_t drawn = 0;
    while (w[r * S + drawn] != 1.0f) ++drawn;
    for (std::int64_t c = 0; c < Ev; ++c) {
      EXPECT_EQ(one.output[r * Ev + c], v[((r / L) * S + drawn) * Ev + c]);
    }
  }
  const F::StochasticOptions many = F::StochasticOptions().seed(11).samples(64);
  test::expect_same_on_one_and_two_threads([&] {
    return std::vector<Tensor>{
        F::stochastic_hard_weights(F::attention_scores(q, k, F::Score::dot), many)};
  });
  const Tensor a = F::stochastic_hard_weights(F::attention_scores(q, k, F::Score::dot), many);
  const Tensor b = F::stochastic_hard_weights(F::attention_scores(q, k, F::Score::dot), many);
  EXPECT_TENSOR_NEAR(a, b, (test::Tolerance{0, 0}));
  const Tensor c = F::stochastic_hard_weights(F::attention_scores(q, k, F::Score::dot),
                                              F::StochasticOptions().seed(12).samples(64));
  bool differs = false;
  for (std::int64_t i = 0; i < a.numel(); ++i) differs = differs || a[i] != c[i];
  EXPECT_TRUE(differs) << "another seed should give other draws";
  // A key of weight 0 (score -inf) is never drawn.
  Tensor s = Tensor::from_vector({1, 3}, {0.0f, -INFINITY, 0.0f});
  const Tensor never = F::stochastic_hard_weights(s, F::StochasticOptions().samples(1000));
  EXPECT_EQ(never[1], 0.0f);
  EXPECT_THAT(
      test::Call([&] { (void)F::stochastic_hard_weights(s, F::StochasticOptions().samples(0)); }),
      ThrowsMessage<ValueError>(HasSubstr("samples must be in")));
}

TEST(StochasticHardAttention, MonteCarloMeanIsTheSoftOutputWithinStandardErrors) {
  const auto fx = test::fixture("spatial/survey_stochastic_dot_soft_reference");
  const Tensor q = fx.tensor("q"), k = fx.tensor("k"), v = fx.tensor("v");
  const Tensor soft_w = fx.tensor("attn_weights");  // torch's softmax weights
  const Tensor soft = fx.tensor("output");
  const std::int64_t m = 20000;
  const F::AttentionResult r =
      F::attend_stochastic(q, k, v, F::Score::dot, F::StochasticOptions().seed(3).samples(m));
  const std::int64_t B = q.dim(0), L = q.dim(1), S = k.dim(1), Ev = v.dim(2);
  int beyond3 = 0, total = 0;
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t l = 0; l < L; ++l) {
      for (std::int64_t c = 0; c < Ev; ++c) {
        double mean = 0.0, sq = 0.0;
        for (std::int64_t s = 0; s < S; ++s) {
          const double w = soft_w[(b * L + l) * S + s], x = v[(b * S + s) * Ev + c];
          mean += w * x;
          sq += w * x * x;
        }
        const double se = std::sqrt(std::max(sq - mean * mean, 0.0) / static_cast<double>(m));
        const double got = r.output[(b * L + l) * Ev + c];
        const double diff = std::abs(got - soft[(b * L + l) * Ev + c]);
        EXPECT_LE(diff, 5.0 * se + 1e-6) << "b=" << b << " l=" << l << " c=" << c;
        beyond3 += diff > 3.0 * se;
        ++total;
      }
    }
  }
  // Under the null hypothesis ~0.3% of the estimates lie beyond 3 standard errors.
  EXPECT_LE(beyond3, 2) << "of " << total;
}

}  // namespace
}  // namespace cvattn
