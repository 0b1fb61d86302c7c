#pragma once
// Reference twins of functional/detail/sparse_kernels.hpp: the definitions in plain loops with
// double sums, the oracles of the parity test run on every SIMD target. Same arguments and
// layouts as the kernels; only the in-image terms are summed (the kernels' padding terms are +0
// or masked by the caller).
#include <cmath>
#include <cstdint>
#include <limits>

namespace cvattn::reference {

// detail::local_scores_row for the slots whose x + dx is inside [0, W); the others are not
// written.
inline void local_scores_row(const float* q, std::int64_t q_cs, const float* k, std::int64_t k_cs,
                             std::int64_t k_rs, std::int64_t C, std::int64_t W, std::int64_t D,
                             std::int64_t dy_lo, std::int64_t dy_hi, float* scores) {
  const std::int64_t side = 2 * D + 1;
  for (std::int64_t dy = dy_lo; dy <= dy_hi; ++dy) {
    for (std::int64_t dx = -D; dx <= D; ++dx) {
      float* srow = scores + ((dy + D) * side + dx + D) * W;
      for (std::int64_t x = 0; x < W; ++x) {
        if (x + dx < 0 || x + dx >= W) continue;
        double s = 0.0;
        for (std::int64_t c = 0; c < C; ++c) {
          s += double{q[c * q_cs + x]} * k[c * k_cs + dy * k_rs + x + dx];
        }
        srow[x] = static_cast<float>(s);
      }
    }
  }
}

// detail::local_sum_row over the in-image terms.
inline void local_sum_row(const float* w, const float* v, std::int64_t v_cs, std::int64_t v_rs,
                          std::int64_t Cv, std::int64_t W, std::int64_t D, std::int64_t dy_lo,
                          std::int64_t dy_hi, float* out, std::int64_t out_cs) {
  const std::int64_t side = 2 * D + 1;
  for (std::int64_t c = 0; c < Cv; ++c) {
    for (std::int64_t x = 0; x < W; ++x) {
      double s = 0.0;
      for (std::int64_t dy = dy_lo; dy <= dy_hi; ++dy) {
        for (std::int64_t dx = -D; dx <= D; ++dx) {
          if (x + dx < 0 || x + dx >= W) continue;
          s += double{w[((dy + D) * side + dx + D) * W + x]} * v[c * v_cs + dy * v_rs + x + dx];
        }
      }
      out[c * out_cs + x] = static_cast<float>(s);
    }
  }
}

inline void gathered_dots(const float* q, const float* k, std::int64_t E, const std::int32_t* idx,
                          std::int64_t count, float* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    double s = 0.0;
    for (std::int64_t e = 0; e < E; ++e) s += double{q[e]} * k[std::int64_t{idx[i]} * E + e];
    out[i] = static_cast<float>(s);
  }
}

inline void gathered_weighted_sum(const float* w, const float* v, std::int64_t Ev,
                                  const std::int32_t* idx, std::int64_t count, float* out) {
  for (std::int64_t c = 0; c < Ev; ++c) {
    double s = 0.0;
    for (std::int64_t i = 0; i < count; ++i) s += double{w[i]} * v[std::int64_t{idx[i]} * Ev + c];
    out[c] = static_cast<float>(s);
  }
}

// detail::nan_as_lowest, values_at_least and indices_where: select_keys' top-k scans.
inline void nan_as_lowest(const float* s, std::int64_t n, float* vals) {
  for (std::int64_t j = 0; j < n; ++j) {
    vals[j] = std::isnan(s[j]) ? -std::numeric_limits<float>::infinity() : s[j];
  }
}

inline std::int64_t values_at_least(const float* vals, std::int64_t n, float bound, float* out) {
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    if (vals[j] >= bound) out[count++] = vals[j];
  }
  return count;
}

inline std::int64_t indices_where(const float* vals, std::int64_t n, float thr, bool above,
                                  std::int32_t* out, std::int64_t limit) {
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < n && count < limit; ++j) {
    if (above ? vals[j] > thr : vals[j] == thr) out[count++] = static_cast<std::int32_t>(j);
  }
  return count;
}

}  // namespace cvattn::reference
