#pragma once
// Reference twin of functional/detail/reduce.hpp: the definition in plain loops (a double sum,
// NaN-propagating max), the oracle of the parity test run on every SIMD target.
#include <cmath>
#include <cstdint>
#include <limits>

#include "functional/detail/reduce.hpp"

namespace cvattn::reference {

inline detail::PlaneStats plane_mean_max(const float* p, std::int64_t n) {
  double total = 0.0;
  float mx = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (std::int64_t i = 0; i < n; ++i) {
    total += p[i];
    mx = p[i] > mx ? p[i] : mx;
    nan = nan || std::isnan(p[i]);
  }
  if (nan) mx = std::numeric_limits<float>::quiet_NaN();
  return {static_cast<float>(total / static_cast<double>(n)), mx};
}

// The hard normaliser's rule as a scan: j replaces the best so far when it is a number and the
// best is NaN, or both are numbers and x[j] is larger.
inline std::int64_t first_max_index(const float* p, std::int64_t n) {
  std::int64_t best = 0;
  for (std::int64_t j = 1; j < n; ++j) {
    const bool nj = std::isnan(p[j]), nb = std::isnan(p[best]);
    if ((!nj && nb) || (!nj && !nb && p[j] > p[best])) best = j;
  }
  return best;
}

}  // namespace cvattn::reference
