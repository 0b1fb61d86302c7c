#include "cvattn/functional/survey_attention.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/linear.hpp"
#include "functional/detail/eigen_maps.hpp"

namespace cvattn::functional {
namespace {

using detail::attn::cmap;
using detail::attn::mmap;

void check_qkv(const Tensor& q, const Tensor& k, const Tensor& v, const char* where) {
  check_rank(q, 3, "q", where);
  check_rank(k, 3, "k", where);
  check_shape(v, {k.dim(0), k.dim(1), kAny}, "v", where);
}

// output [B, L, Ev] = weights [B, L, S] @ v [B, S, Ev].
AttentionResult weighted_sum(Tensor weights, const Tensor& v) {
  const std::int64_t B = weights.dim(0), L = weights.dim(1), S = weights.dim(2), Ev = v.dim(2);
  AttentionResult r{Tensor::empty({B, L, Ev}), weights};
  const float* w = r.attn_weights.data();
  const float* vd = v.data();
  float* o = r.output.data();
  detail::parallel_for(B, [&](std::int64_t b) {
    detail::attn::product(mmap(o + b * L * Ev, L, Ev), cmap(w + b * L * S, L, S),
                          cmap(vd + b * S * Ev, S, Ev));
  });
  return r;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

Tensor threshold_weights(const Tensor& scores, double tau) {
  const char* where = "threshold_weights";
  CVATTN_CHECK(scores.defined() && scores.rank() >= 1, ShapeError, where,
               ": tensor 'scores' expected [..., S] (rank >= 1)");
  CVATTN_CHECK(std::isfinite(tau), ValueError, where, ": tau must be finite, got ", tau);
  Tensor w = normalize_scores(scores, Normalizer::softmax);
  const std::int64_t S = w.dim(-1), rows = S > 0 ? w.numel() / S : 0;
  const float t = static_cast<float>(tau);
  float* p = w.data();
  detail::parallel_for(rows, [&](std::int64_t r) {
    float* x = p + r * S;
    // The kept weights' sum in order, in double; the first maximum only when nothing is kept.
    double kept = 0.0;
    for (std::int64_t j = 0; j < S; ++j) {
      if (x[j] >= t) kept += x[j];
    }
    if (kept > 0.0) {
      const float inv = static_cast<float>(kept);
      for (std::int64_t j = 0; j < S; ++j) x[j] = x[j] >= t ? x[j] / inv : 0.0f;
    } else {
      std::int64_t best = 0;
      for (std::int64_t j = 1; j < S; ++j) {
        if (x[j] > x[best]) best = j;  // first maximum: ties go to the lowest index
      }
      std::fill(x, x + S, 0.0f);
      x[best] = 1.0f;
    }
  });
  return w;
}

AttentionResult attend_thresholded(const Tensor& q, const Tensor& k, const Tensor& v, Score score,
                                   double tau, const ScoreParams& params) {
  check_qkv(q, k, v, "attend_thresholded");
  return weighted_sum(threshold_weights(attention_scores(q, k, score, params), tau), v);
}

Tensor stochastic_hard_weights(const Tensor& scores, const StochasticOptions& options) {
  const char* where = "stochastic_hard_weights";
  CVATTN_CHECK(scores.defined() && scores.rank() >= 1, ShapeError, where,
               ": tensor 'scores' expected [..., S] (rank >= 1)");
  const std::int64_t m = options.samples();
  CVATTN_CHECK(m >= 1 && m <= (std::int64_t{1} << 30), ValueError, where,
               ": samples must be in [1, 2^30], got ", m);
  Tensor w = normalize_scores(scores, Normalizer::softmax);
  const std::int64_t S = w.dim(-1), rows = S > 0 ? w.numel() / S : 0;
  CVATTN_CHECK(w.all_finite(), ValueError, where,
               ": the softmax of 'scores' is not finite (NaN scores cannot be sampled)");
  Tensor out = Tensor::zeros(w.shape());
  std::vector<double> cum(static_cast<std::size_t>(rows * S));
  const float* p = w.data();
  float* o = out.data();
  const std::uint64_t seed = splitmix64(options.seed());
  const float inc = 1.0f / static_cast<float>(m);
  detail::parallel_for(rows, [&](std::int64_t r) {
    const float* x = p + r * S;
    double* c = cum.data() + r * S;
    double total = 0.0;
    for (std::int64_t j = 0; j < S; ++j) c[j] = total += x[j];
    float* y = o + r * S;
    for (std::int64_t d = 0; d < m; ++d) {
      const std::uint64_t bits = splitmix64(
          seed ^ splitmix64(static_cast<std::uint64_t>(r) * static_cast<std::uint64_t>(m) +
                            static_cast<std::uint64_t>(d)));
      const double u = static_cast<double>(bits >> 11) * 0x1.0p-53 * total;
      // First index whose cumulative weight exceeds u (binary search).
      std::int64_t lo = 0, hi = S - 1;
      while (lo < hi) {
        const std::int64_t mid = (lo + hi) / 2;
        if (c[mid] > u) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      y[lo] += inc;
    }
  });
  return out;
}

AttentionResult attend_stochastic(const Tensor& q, const Tensor& k, const Tensor& v, Score score,
                                  const StochasticOptions& options, const ScoreParams& params) {
  check_qkv(q, k, v, "attend_stochastic");
  return weighted_sum(stochastic_hard_weights(attention_scores(q, k, score, params), options), v);
}

LocalAlignment parse_local_alignment(std::string_view word) {
  if (word == "local-m" || word == "monotonic" || word == "local_m")
    return LocalAlignment::monotonic;
  if (word == "local-p" || word == "predictive" || word == "local_p")
    return LocalAlignment::predictive;
  throw ValueError("local alignment must be local-m (monotonic) or local-p (predictive), got '" +
                   std::string(word) + "'");
}

AttentionResult luong_local_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      Score score, const LuongLocalOptions& options,
                                      const ScoreParams& params, Tensor* positions) {
  const char* where = "luong_local_attention";
  check_qkv(q, k, v, where);
  const std::int64_t D = options.window();
  CVATTN_CHECK(D >= 1, ValueError, where, ": window D must be >= 1 (sigma = D/2), got ", D);
  const std::int64_t B = q.dim(0), L = q.dim(1), S = k.dim(1);
  Tensor p = Tensor::empty({B, L});
  if (options.alignment() == LocalAlignment::monotonic) {
    for (std::int64_t i = 0; i < B * L; ++i) p[i] = static_cast<float>(i % L);
  } else {
    const Tensor& wp = options.position_weight();
    const Tensor& vp = options.position_vector();
    CVATTN_CHECK(wp.defined() && vp.defined(), ValueError, where,
                 ": local-p needs position_weight W_p [A, Eq] and position_vector v_p [A]");
    check_shape(wp, {kAny, q.dim(2)}, "position_weight", where);
    check_shape(vp, {wp.dim(0)}, "position_vector", where);
    // p_t = S * sigmoid(v_p^T tanh(W_p h_t)).
    const Tensor g = linear(tanh(linear(q, wp)), vp.reshape({1, wp.dim(0)}));  // [B, L, 1]
    const Tensor sg = sigmoid(g);
    for (std::int64_t i = 0; i < B * L; ++i) p[i] = static_cast<float>(S) * sg[i];
  }
  const Tensor scores = attention_scores(q, k, score, params);
  Tensor w = Tensor::zeros({B, L, S});
  const float sigma = static_cast<float>(D) / 2.0f;
  const float two_sigma2 = 2.0f * sigma * sigma;
  const float* sp = scores.data();
  float* wpt = w.data();
  detail::parallel_for(B * L, [&](std::int64_t row) {
    const float pt = p[row];
    const std::int64_t lo = std::max<std::int64_t>(
        0, static_cast<std::int64_t>(std::ceil(static_cast<double>(pt) - static_cast<double>(D))));
    const std::int64_t hi = std::min<std::int64_t>(
        S - 1,
        static_cast<std::int64_t>(std::floor(static_cast<double>(pt) + static_cast<double>(D))));
    if (lo > hi) return;
    const float* s = sp + row * S;
    float* x = wpt + row * S;
    float mx = s[lo];
    for (std::int64_t j = lo + 1; j <= hi; ++j) mx = std::max(mx, s[j]);
    float sum = 0.0f;
    for (std::int64_t j = lo; j <= hi; ++j) sum += x[j] = std::exp(s[j] - mx);
    for (std::int64_t j = lo; j <= hi; ++j) {
      const float d = static_cast<float>(j) - pt;
      x[j] = x[j] / sum * std::exp(-(d * d) / two_sigma2);
    }
  });
  if (positions != nullptr) *positions = p;
  return weighted_sum(w, v);
}

}  // namespace cvattn::functional
