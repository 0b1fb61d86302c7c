#pragma once
// Reference twin of functional/detail/sdpa_kernel.hpp: run_sdpa's definition in plain loops
// (double sums, libm exp), the oracle of the parity test run on every SIMD target.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "functional/detail/sdpa_kernel.hpp"

namespace cvattn::reference {

// softmax_j(scale * q_i . k_j + mask_ij) over the keys j allowed (j <= i when causal; a row whose
// allowed scores are all -inf gets zero weights), times V; the weights per head or averaged over
// each group of avg_group heads, as the plan asks.
inline void run_sdpa(const detail::SdpaPlan& p) {
  std::vector<double> w(static_cast<std::size_t>(p.S));
  for (std::int64_t h = 0; h < p.heads; ++h) {
    const float* q = p.q + p.q_off[h];
    const float* k = p.k + p.k_off[h];
    const float* v = p.v + p.v_off[h];
    for (std::int64_t i = 0; i < p.L; ++i) {
      const std::int64_t allowed = p.causal ? std::min(i + 1, p.S) : p.S;
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < allowed; ++j) {
        double s = 0.0;
        for (std::int64_t e = 0; e < p.E; ++e) s += double{q[i * p.q_rs + e]} * k[j * p.k_rs + e];
        s *= p.scale;
        if (p.mask != nullptr) s += p.mask[p.mask_off[h] + i * p.mask_rs + j * p.mask_cs];
        w[static_cast<std::size_t>(j)] = s;
        m = s > m ? s : m;
      }
      double sum = 0.0;
      for (std::int64_t j = 0; j < p.S; ++j) {
        double& x = w[static_cast<std::size_t>(j)];
        x = j < allowed && m != -std::numeric_limits<double>::infinity() ? std::exp(x - m) : 0.0;
        sum += x;
      }
      for (std::int64_t j = 0; j < p.S; ++j) {
        if (sum > 0.0) w[static_cast<std::size_t>(j)] /= sum;
      }
      for (std::int64_t c = 0; c < p.Ev; ++c) {
        double o = 0.0;
        for (std::int64_t j = 0; j < p.S; ++j)
          o += w[static_cast<std::size_t>(j)] * v[j * p.v_rs + c];
        p.out[p.out_off[h] + i * p.out_rs + c] = static_cast<float>(o);
      }
      if (p.weights != nullptr) {
        for (std::int64_t j = 0; j < p.S; ++j) {
          p.weights[(h * p.L + i) * p.S + j] = static_cast<float>(w[static_cast<std::size_t>(j)]);
        }
      } else if (p.weights_avg != nullptr) {
        float* a = p.weights_avg + ((h / p.avg_group) * p.L + i) * p.S;
        for (std::int64_t j = 0; j < p.S; ++j) {
          const float x = static_cast<float>(w[static_cast<std::size_t>(j)] / p.avg_group);
          a[j] = h % p.avg_group == 0 ? x : a[j] + x;
        }
      }
    }
  }
}

}  // namespace cvattn::reference
