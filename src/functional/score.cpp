#include "cvattn/functional/score.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/reduce.hpp"
#include "functional/detail/softmax.hpp"

namespace cvattn::functional {
namespace {

using cvattn::detail::Trans;
constexpr auto gemm = &cvattn::detail::sgemm;

constexpr const char* kScores = "attention_scores";

const char* score_name(Score s) {
  switch (s) {
    case Score::dot:
      return "dot";
    case Score::scaled_dot:
      return "scaled_dot";
    case Score::general:
      return "general";
    case Score::additive:
      return "additive";
    case Score::cosine:
      return "cosine";
  }
  return "?";
}

// NaN ranks below every number; among equals the lower index comes first.
bool ranks_before(float a, std::int64_t ia, float b, std::int64_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return nb;
  if (!na && a != b) return a > b;
  return ia < ib;
}

// scores[b] = A_b B_b^T for row-major A [rows_a, E] and B [rows_b, E] per batch.
void batched_abt(const float* a, std::int64_t rows_a, const float* b, std::int64_t rows_b,
                 std::int64_t E, std::int64_t batches, float* out) {
  detail::parallel_for(batches, [&](std::int64_t n) {
    gemm(Trans::no, Trans::yes, rows_a, rows_b, E, 1.0f, a + n * rows_a * E, E, b + n * rows_b * E,
         E, 0.0f, out + n * rows_a * rows_b, rows_b);
  });
}

// x [rows, in] @ W^T for W [out, in] (nn.Linear layout, no bias).
Tensor linear_no_bias(const Tensor& x, const Tensor& w) {
  const std::int64_t rows = x.numel() / x.dim(-1), in = x.dim(-1), out = w.dim(0);
  Tensor y = Tensor::empty({rows, out});
  gemm(Trans::no, Trans::yes, rows, out, in, 1.0f, x.data(), in, w.data(), in, 0.0f, y.data(), out);
  return y;
}

}  // namespace

Score parse_score(std::string_view word) {
  for (Score s : {Score::dot, Score::scaled_dot, Score::general, Score::additive, Score::cosine}) {
    if (word == score_name(s)) return s;
  }
  throw ValueError(detail::concat("parse_score: unknown score '", std::string(word),
                                  "'; expected dot, scaled_dot, general, additive or cosine"));
}

Normalizer parse_normalizer(std::string_view word) {
  if (word == "softmax") return Normalizer::softmax;
  if (word == "hard") return Normalizer::hard;
  if (word == "topk") return Normalizer::topk;
  throw ValueError(detail::concat("parse_normalizer: unknown normalizer '", std::string(word),
                                  "'; expected softmax, hard or topk"));
}

Tensor attention_scores(const Tensor& q, const Tensor& k, Score score, const ScoreParams& params) {
  const char* where = kScores;
  check_rank(q, 3, "q", where);
  check_rank(k, 3, "k", where);
  const std::int64_t B = q.dim(0), L = q.dim(1), Eq = q.dim(2);
  const std::int64_t S = k.dim(1), Ek = k.dim(2);
  CVATTN_CHECK(k.dim(0) == B, ShapeError, where, ": tensor 'k' expected [", B,
               ", *, *] (batch of 'q' ", to_string(q.shape()), "), got ", to_string(k.shape()));
  CVATTN_CHECK(Eq > 0 && Ek > 0, ShapeError, where, ": embedding sizes must be positive, got 'q' ",
               to_string(q.shape()), " and 'k' ", to_string(k.shape()));
  const bool same_e = score == Score::dot || score == Score::scaled_dot || score == Score::cosine;
  CVATTN_CHECK(!same_e || Ek == Eq, ShapeError, where, ": tensor 'k' expected [", B, ", *, ", Eq,
               "] (score '", score_name(score), "' needs the E of 'q' ", to_string(q.shape()),
               "), got ", to_string(k.shape()));
  Tensor out = Tensor::empty({B, L, S});
  float* o = out.data();
  switch (score) {
    case Score::dot:
    case Score::scaled_dot: {
      float scale = 1.0f;
      if (score == Score::scaled_dot) {
        const double s = params.scale ? *params.scale : 1.0 / std::sqrt(static_cast<double>(Eq));
        CVATTN_CHECK(std::isfinite(s), ValueError, where, ": scale must be finite, got ", s);
        scale = static_cast<float>(s);
      }
      batched_abt(q.data(), L, k.data(), S, Eq, B, o);
      if (score == Score::scaled_dot) detail::scale_row(o, out.numel(), scale);
      break;
    }
    case Score::general: {
      check_defined(params.weight, "weight", where);
      check_shape(params.weight, {Eq, Ek}, "weight", where);
      // (q W) k^T: W maps query features into key space once per query row.
      Tensor qw = Tensor::empty({B * L, Ek});
      gemm(Trans::no, Trans::no, B * L, Ek, Eq, 1.0f, q.data(), Eq, params.weight.data(), Ek, 0.0f,
           qw.data(), Ek);
      batched_abt(qw.data(), L, k.data(), S, Ek, B, o);
      break;
    }
    case Score::additive: {
      check_defined(params.query_weight, "query_weight", where);
      check_rank(params.query_weight, 2, "query_weight", where);
      const std::int64_t A = params.query_weight.dim(0);
      CVATTN_CHECK(A > 0, ShapeError, where,
                   ": tensor 'query_weight' expected [A, Eq] with A >= 1, got ",
                   to_string(params.query_weight.shape()));
      check_shape(params.query_weight, {A, Eq}, "query_weight", where);
      check_defined(params.key_weight, "key_weight", where);
      check_shape(params.key_weight, {A, Ek}, "key_weight", where);
      check_defined(params.vector, "vector", where);
      check_shape(params.vector, {A}, "vector", where);
      const Tensor wq = linear_no_bias(q, params.query_weight);  // [B*L, A]
      const Tensor uk = linear_no_bias(k, params.key_weight);    // [B*S, A]
      const float* wqd = wq.data();
      const float* ukd = uk.data();
      const float* va = params.vector.data();
      detail::parallel_for(B * L, [&](std::int64_t bl) {
        const std::int64_t b = bl / L;
        const float* x = wqd + bl * A;
        detail::additive_scores(x, ukd + b * S * A, A, va, A, S, o + bl * S);
      });
      break;
    }
    case Score::cosine: {
      CVATTN_CHECK(params.eps >= 0 && std::isfinite(params.eps), ValueError, where,
                   ": eps must be finite and non-negative, got ", params.eps);
      batched_abt(q.data(), L, k.data(), S, Eq, B, o);
      const auto norms = [&](const Tensor& t, std::int64_t rows, std::int64_t E) {
        std::vector<float> n(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r) {
          double s = 0;
          for (std::int64_t e = 0; e < E; ++e) s += double(t[r * E + e]) * t[r * E + e];
          n[static_cast<std::size_t>(r)] = static_cast<float>(std::max(std::sqrt(s), params.eps));
        }
        return n;
      };
      const std::vector<float> nq = norms(q, B * L, Eq), nk = norms(k, B * S, Eq);
      detail::parallel_for(B * L, [&](std::int64_t bl) {
        const std::int64_t b = bl / L;
        for (std::int64_t s = 0; s < S; ++s) {
          o[bl * S + s] /=
              nq[static_cast<std::size_t>(bl)] * nk[static_cast<std::size_t>(b * S + s)];
        }
      });
      break;
    }
  }
  return out;
}

Tensor normalize_scores(const Tensor& scores, Normalizer normalizer, std::int64_t top_k) {
  const char* where = "normalize_scores";
  check_defined(scores, "scores", where);
  CVATTN_CHECK(scores.rank() >= 1, ShapeError, where,
               ": tensor 'scores' expected [..., S] (rank >= 1), got a scalar");
  const std::int64_t S = scores.dim(-1);
  const std::int64_t rows = S > 0 ? scores.numel() / S : 0;
  if (normalizer == Normalizer::topk) {
    CVATTN_CHECK(top_k >= 1 && top_k <= S, ValueError, where, ": top_k must be in [1, ", S,
                 "] (the key count of 'scores' ", to_string(scores.shape()), "), got ", top_k);
  }
  if (normalizer == Normalizer::hard) {
    // One-hot rows written straight from the scores: no copy of them to overwrite, and a
    // zero fill plus one store instead of a per-element select (which baseline x86-64 code
    // cannot vectorise over 64-bit indices).
    Tensor out = Tensor::empty(scores.shape());
    const float* s = scores.data();
    float* o = out.data();
    detail::parallel_for(rows, [&](std::int64_t r) {
      const std::int64_t best = detail::first_max_index(s + r * S, S);  // ranks_before's first
      detail::zero_row(o + r * S, S);
      o[r * S + best] = 1.0f;
    });
    return out;
  }
  Tensor out = scores.clone();
  float* o = out.data();
  switch (normalizer) {
    case Normalizer::softmax:
      detail::parallel_for(
          rows, [&](std::int64_t r) { detail::softmax_row(o + r * S, S, 1.0f, nullptr, 0, S); });
      break;
    case Normalizer::hard:
      break;  // returned above
    case Normalizer::topk: {
      const std::int64_t threads =
          std::max<std::int64_t>(1, std::min<std::int64_t>(detail::max_threads(), rows));
      std::vector<std::int64_t> index(static_cast<std::size_t>(threads * S));
      std::vector<float> kept(static_cast<std::size_t>(threads * top_k));
      detail::parallel_for(threads, [&](std::int64_t t) {
        std::int64_t* idx = index.data() + t * S;
        float* val = kept.data() + t * top_k;
        for (std::int64_t r = rows * t / threads; r < rows * (t + 1) / threads; ++r) {
          float* x = o + r * S;
          std::iota(idx, idx + S, std::int64_t{0});
          std::partial_sort(idx, idx + top_k, idx + S, [x](std::int64_t a, std::int64_t b) {
            return ranks_before(x[a], a, x[b], b);
          });
          for (std::int64_t i = 0; i < top_k; ++i) val[i] = x[idx[i]];
          detail::softmax_row(val, top_k, 1.0f, nullptr, 0, top_k);
          detail::zero_row(x, S);
          for (std::int64_t i = 0; i < top_k; ++i) x[idx[i]] = val[i];
        }
      });
      break;
    }
  }
  return out;
}

AttentionResult attend(const Tensor& q, const Tensor& k, const Tensor& v, Score score,
                       Normalizer normalizer, const ScoreParams& params, std::int64_t top_k) {
  const char* where = "attend";
  check_rank(q, 3, "q", where);
  check_rank(k, 3, "k", where);
  check_rank(v, 3, "v", where);
  check_shape(v, {k.dim(0), k.dim(1), kAny}, "v", where);
  AttentionResult result;
  result.attn_weights = normalize_scores(attention_scores(q, k, score, params), normalizer, top_k);
  const std::int64_t B = q.dim(0), L = q.dim(1), S = k.dim(1), Ev = v.dim(2);
  result.output = Tensor::empty({B, L, Ev});
  const float* w = result.attn_weights.data();
  const float* vd = v.data();
  float* o = result.output.data();
  detail::parallel_for(B, [&](std::int64_t b) {
    gemm(Trans::no, Trans::no, L, Ev, S, 1.0f, w + b * L * S, S, vd + b * S * Ev, Ev, 0.0f,
         o + b * L * Ev, Ev);
  });
  return result;
}

}  // namespace cvattn::functional
