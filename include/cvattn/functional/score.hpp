#pragma once
// Query-key score functions and score normalisers behind one entry point, for the classic
// attention variants (Luong dot / general, scaled dot product, Bahdanau additive, cosine).
//
//   scores  = attention_scores(q, k, Score, params)            [B, L, S]
//   weights = normalize_scores(scores, Normalizer, top_k)       [B, L, S]
//   output  = weights @ v                                       [B, L, Ev]
//
// attend() runs all three. q [B, L, Eq], k [B, S, Ek], v [B, S, Ev] (equal B).
#include <cstdint>
#include <optional>
#include <string_view>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/attention.hpp"

namespace cvattn::functional {

enum class Score {
  dot,         // q . k                                   (Luong "dot"; Eq == Ek)
  scaled_dot,  // q . k * scale, scale = 1/sqrt(E) unless given (Vaswani; Eq == Ek)
  general,     // q^T W k, W = params.weight [Eq, Ek]     (Luong "general")
  additive,    // v_a^T tanh(W q + U k): W = params.query_weight [A, Eq],
               // U = params.key_weight [A, Ek], v_a = params.vector [A]   (Bahdanau)
  cosine,      // q . k / (max(|q|, eps) * max(|k|, eps)), as F.cosine_similarity (Eq == Ek)
};
// "dot", "scaled_dot", "general", "additive", "cosine"; ValueError otherwise.
[[nodiscard]] CVATTN_EXPORT Score parse_score(std::string_view word);

enum class Normalizer {
  softmax,  // softmax over keys
  hard,     // one-hot at the argmax (ties: the lowest key index wins)
  topk,     // softmax over the top_k largest scores only (renormalised), 0 elsewhere;
            // ties at the k-th place: lower key indices win
};
// "softmax", "hard", "topk"; ValueError otherwise.
[[nodiscard]] CVATTN_EXPORT Normalizer parse_normalizer(std::string_view word);

struct ScoreParams {
  Tensor weight;                // general: W [Eq, Ek]
  Tensor query_weight;          // additive: W [A, Eq] (nn.Linear(Eq, A, bias=False).weight layout)
  Tensor key_weight;            // additive: U [A, Ek]
  Tensor vector;                // additive: v_a [A]
  std::optional<double> scale;  // scaled_dot only; default 1/sqrt(E)
  double eps = 1e-8;            // cosine only
};

// [B, L, S] scores. Tensors a score does not use are ignored; the ones it uses are checked.
[[nodiscard]] CVATTN_EXPORT Tensor attention_scores(const Tensor& q, const Tensor& k, Score score,
                                                    const ScoreParams& params = {});

// Normalises the last dim of scores [..., S]; top_k (1 <= top_k <= S) is read by topk only.
// NaN scores propagate through softmax; hard and topk rank them below every number.
[[nodiscard]] CVATTN_EXPORT Tensor normalize_scores(const Tensor& scores, Normalizer normalizer,
                                                    std::int64_t top_k = 1);

// scores -> weights -> weights @ v. Returns output [B, L, Ev] and attn_weights [B, L, S].
[[nodiscard]] CVATTN_EXPORT AttentionResult attend(const Tensor& q, const Tensor& k,
                                                   const Tensor& v, Score score,
                                                   Normalizer normalizer,
                                                   const ScoreParams& params = {},
                                                   std::int64_t top_k = 1);

}  // namespace cvattn::functional
