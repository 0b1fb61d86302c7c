#pragma once
// Checks shared by the spatial-attention ops: a --set value the weights also determine must
// agree with them (docs/cli.md, second round).
#include <cstdint>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/core/options.hpp"
#include "op.hpp"

namespace cvattn::cli::ops {

inline void check_setting_matches(const Settings& s, const char* op, const std::string& key,
                                  std::int64_t from_weights, const std::string& weight_key) {
  if (!s.given(key)) return;
  CVATTN_CHECK(s.integer(key) == from_weights, ValueError, op, ": --set ", key, "=", s.integer(key),
               " contradicts the weights, whose '", weight_key, "' gives ", key, "=", from_weights);
}

inline void check_pair_matches(const Settings& s, const char* op, const std::string& key,
                               Pair2 from_weights, const std::string& weight_key) {
  if (!s.given(key)) return;
  const Pair2 v = s.pair(key);
  CVATTN_CHECK(v == from_weights, ValueError, op, ": --set ", key, "=", v.h, ",", v.w,
               " contradicts the weights, whose '", weight_key, "' gives ", key, "=",
               from_weights.h, ",", from_weights.w);
}

}  // namespace cvattn::cli::ops
