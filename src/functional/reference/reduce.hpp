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

}  // namespace cvattn::reference
