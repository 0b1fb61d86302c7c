#pragma once
// Private helpers shared by the sliding-window kernels (conv, pooling): option range checks and
// the range of output positions whose input tap lies inside the image.
#include <algorithm>
#include <cstdint>

#include "cvattn/core/error.hpp"
#include "cvattn/core/options.hpp"

namespace cvattn::functional::detail {

// Larger strides, paddings, dilations or kernels are nonsense for images and would overflow the
// size arithmetic; rejecting them keeps every intermediate far inside int64.
inline constexpr std::int64_t kMaxWindowValue = std::int64_t{1} << 31;

// Throws ValueError "<where>: <name> must be positive, got (0, 1)" (non-negative when lo is 0)
// unless both parts are in [lo, kMaxWindowValue].
inline void check_pair(Pair2 value, std::int64_t lo, const char* name, const char* where) {
  CVATTN_CHECK(value.h >= lo && value.w >= lo, ValueError, where, ": ", name, " must be ",
               (lo == 0 ? "non-negative" : "positive"), ", got (", value.h, ", ", value.w, ")");
  CVATTN_CHECK(value.h <= kMaxWindowValue && value.w <= kMaxWindowValue, ValueError, where, ": ",
               name, " must be at most ", kMaxWindowValue, ", got (", value.h, ", ", value.w, ")");
}

// Output positions o in [lo, hi) read input index o*stride + offset inside [0, size).
struct ValidRange {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

inline ValidRange valid_range(std::int64_t size, std::int64_t out, std::int64_t stride,
                              std::int64_t offset) {
  // o*stride + offset >= 0  <=>  o >= ceil(-offset / stride)
  std::int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // o*stride + offset <= size - 1  <=>  o <= floor((size - 1 - offset) / stride)
  std::int64_t hi = size - 1 - offset >= 0 ? (size - 1 - offset) / stride + 1 : 0;
  lo = std::min(lo, out);
  hi = std::max(std::min(hi, out), lo);
  return {lo, hi};
}

}  // namespace cvattn::functional::detail
