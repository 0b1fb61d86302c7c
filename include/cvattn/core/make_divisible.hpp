#pragma once
// make_divisible: timm's rule (layers/helpers.py) for the reduced width of an attention
// bottleneck, e.g. SEModule's R = make_divisible(C / 16, 8, 0, 0.0). docs/modules.md §1.1.
#include <cmath>
#include <cstdint>

#include "cvattn/core/error.hpp"

namespace cvattn {

// Python semantics, for v >= 0:
//   m = min_value if min_value else divisor
//   r = max(m, trunc(v + divisor / 2) // divisor * divisor)
//   if r < round_limit * v: r += divisor
// round_limit 0 disables the bump (SE, CBAM); 0.9 (the default) never shrinks v by over 10%.
[[nodiscard]] inline std::int64_t make_divisible(double v, std::int64_t divisor = 8,
                                                 std::int64_t min_value = 0,
                                                 double round_limit = 0.9) {
  CVATTN_CHECK(divisor >= 1 && divisor <= (std::int64_t{1} << 30), ValueError,
               "make_divisible: divisor must be in [1, 2^30], got ", divisor);
  CVATTN_CHECK(min_value >= 0, ValueError, "make_divisible: min_value must be >= 0, got ",
               min_value);
  // The bound keeps trunc() and the bump inside int64 (and far above any channel count).
  CVATTN_CHECK(v >= 0 && v <= 1e15, ValueError, "make_divisible: value must be in [0, 1e15], got ",
               v);
  CVATTN_CHECK(std::isfinite(round_limit), ValueError,
               "make_divisible: round_limit must be finite, got ", round_limit);
  const std::int64_t m = min_value != 0 ? min_value : divisor;
  // divisor / 2 is a float division in Python; trunc() is int() (toward zero, v >= 0).
  const auto t = static_cast<std::int64_t>(v + static_cast<double>(divisor) / 2.0);
  std::int64_t r = (t / divisor) * divisor;
  if (r < m) r = m;
  if (static_cast<double>(r) < round_limit * v) r += divisor;
  return r;
}

}  // namespace cvattn
