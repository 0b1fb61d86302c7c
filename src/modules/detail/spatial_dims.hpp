#pragma once
// Head widths of timm's spatial self-attention layers (BottleneckAttn, HaloAttn): the value
// head is dim_out / heads, the query/key head dim_head or make_divisible(dim_out * qk_ratio,
// 8) / heads.
#include <cstdint>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/core/state_dict.hpp"
#include "modules/detail/state_dict_shapes.hpp"
#include "modules/repr.hpp"

namespace cvattn::detail {

inline std::int64_t qk_head_width(const char* who, std::int64_t dim_out, std::int64_t heads,
                                  std::int64_t dim_head, double qk_ratio) {
  CVATTN_CHECK(heads >= 1 && dim_out >= 1 && dim_out % heads == 0, ValueError, who, ": dim_out ",
               dim_out, " must be a positive multiple of num_heads ", heads);
  CVATTN_CHECK(dim_head >= 0, ValueError, who, ": dim_head must be >= 0 (0: from qk_ratio), got ",
               dim_head);
  if (dim_head > 0) return dim_head;
  CVATTN_CHECK(std::isfinite(qk_ratio) && qk_ratio > 0, ValueError, who,
               ": qk_ratio must be positive and finite, got ", qk_ratio);
  const std::int64_t w = make_divisible(static_cast<double>(dim_out) * qk_ratio, 8) / heads;
  CVATTN_CHECK(w >= 1, ValueError, who, ": the query/key head width is 0 (dim_out ", dim_out,
               ", qk_ratio ", qk_ratio, ", num_heads ", heads, "); give dim_head");
  return w;
}

// A 1x1 conv weight [O, I, 1, 1] under prefix + key.
inline const Shape& require_prefixed_conv1x1(const StateDict& dict, const std::string& prefix,
                                             const std::string& key, const char* where) {
  return require_conv1x1(dict, key_prefix(prefix) + key, where);
}

}  // namespace cvattn::detail
