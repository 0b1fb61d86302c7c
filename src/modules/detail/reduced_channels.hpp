#pragma once
// The bottleneck width of a reducing attention module (the *Options::reduced_channels helpers).
#include <cmath>
#include <cstdint>

#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"

namespace cvattn::detail {

// rd_channels when set (> 0), else timm's make_divisible(channels * rd_ratio, rd_divisor, 0,
// round_limit). ValueError "<who>: rd_channels must be >= 0 ..." or "<who>: rd_ratio must be
// positive and finite ..."; `channels` is the caller's to check.
inline std::int64_t reduced_channels(const char* who, std::int64_t channels,
                                     std::int64_t rd_channels, double rd_ratio,
                                     std::int64_t rd_divisor, double round_limit) {
  CVATTN_CHECK(rd_channels >= 0, ValueError, who,
               ": rd_channels must be >= 0 (0: from rd_ratio), got ", rd_channels);
  if (rd_channels > 0) return rd_channels;
  CVATTN_CHECK(std::isfinite(rd_ratio) && rd_ratio > 0, ValueError, who,
               ": rd_ratio must be positive and finite, got ", rd_ratio);
  return make_divisible(static_cast<double>(channels) * rd_ratio, rd_divisor, 0, round_limit);
}

}  // namespace cvattn::detail
