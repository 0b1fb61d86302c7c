#pragma once
// The classic mechanisms of docs/modules.md §19, on the score family of score.hpp (any Score:
// dot, scaled_dot, general, additive, cosine; scores [B, L, S] from attention_scores):
//
//   thresholded attention   w = softmax(scores); entries < tau -> 0; renormalised; a row with
//                           no entry >= tau keeps its argmax alone (ties: lowest index)
//   stochastic hard         s ~ Categorical(softmax(scores)) per query, M draws averaged
//   attention               (Show, Attend and Tell); weights = the mean of the one-hots
//   Luong local attention   local-m (p_t = t) and local-p (p_t = S sigmoid(v_p^T tanh(W_p h_t)))
//                           with the Gaussian window exp(-(s - p_t)^2 / (2 (D/2)^2)), not
//                           renormalised
//
// Each returns the weights it used: output = weights @ v exactly. docs/survey_mechanisms.md
// gives the equations. These are separate entry points rather than more Normalizer values
// because they need parameters (tau, seed, samples, the window) normalize_scores cannot carry.
#include <cstdint>
#include <string_view>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/score.hpp"

namespace cvattn::functional {

// Thresholded weights of scores [..., S]; tau finite (tau <= 0 keeps the plain softmax).
[[nodiscard]] CVATTN_EXPORT Tensor threshold_weights(const Tensor& scores, double tau);

// q [B, L, Eq], k [B, S, Ek], v [B, S, Ev]: output [B, L, Ev], attn_weights [B, L, S].
[[nodiscard]] CVATTN_EXPORT AttentionResult attend_thresholded(const Tensor& q, const Tensor& k,
                                                               const Tensor& v, Score score,
                                                               double tau,
                                                               const ScoreParams& params = {});

struct StochasticOptions {
  CVATTN_ARG(std::int64_t, samples) = 1;  // M >= 1 draws per query, averaged
  CVATTN_ARG(std::uint64_t, seed) = 0;
};

// Draws of scores [..., S]: for row r and draw m, u = U(seed, r, m) in [0, 1) from a
// counter-based generator (splitmix64 of the seed and r*M + m, so any thread count gives the
// same draws) and s = the first index whose cumulative softmax weight exceeds u * total (an
// index of weight 0 is never drawn). Returns the mean one-hot [..., S] (counts / M).
[[nodiscard]] CVATTN_EXPORT Tensor stochastic_hard_weights(const Tensor& scores,
                                                           const StochasticOptions& options = {});

[[nodiscard]] CVATTN_EXPORT AttentionResult attend_stochastic(const Tensor& q, const Tensor& k,
                                                              const Tensor& v, Score score,
                                                              const StochasticOptions& options = {},
                                                              const ScoreParams& params = {});

enum class LocalAlignment {
  monotonic,   // local-m: p_t = t (the query index)
  predictive,  // local-p: p_t = S * sigmoid(v_p^T tanh(W_p q_t))
};
// "local-m" / "monotonic" -> monotonic, "local-p" / "predictive" -> predictive; ValueError
// otherwise.
[[nodiscard]] CVATTN_EXPORT LocalAlignment parse_local_alignment(std::string_view word);

struct LuongLocalOptions {
  CVATTN_ARG(LocalAlignment, alignment) = LocalAlignment::monotonic;
  CVATTN_ARG(std::int64_t, window) = 2;  // D >= 1; sigma = D / 2
  CVATTN_ARG(Tensor, position_weight);   // W_p [A, Eq] (local-p)
  CVATTN_ARG(Tensor, position_vector);   // v_p [A]     (local-p)
};

// Luong local attention of queries q [B, L, Eq] (the target states h_t) over keys k [B, S, Ek]
// and values v [B, S, Ev] (both h_s in the paper). For each query the window is the integer
// positions s with p_t - D <= s <= p_t + D and 0 <= s < S;
//   a_t(s) = softmax_window(score(q_t, k_s)) * exp(-(s - p_t)^2 / (2 sigma^2)),  0 elsewhere;
// an empty window (local-m with t >= S + D) gives zero weights and a zero output.
// Returns output [B, L, Ev] and attn_weights [B, L, S]; positions (optional) receives p_t
// [B, L].
[[nodiscard]] CVATTN_EXPORT AttentionResult luong_local_attention(const Tensor& q, const Tensor& k,
                                                                  const Tensor& v, Score score,
                                                                  const LuongLocalOptions& options,
                                                                  const ScoreParams& params = {},
                                                                  Tensor* positions = nullptr);

}  // namespace cvattn::functional
