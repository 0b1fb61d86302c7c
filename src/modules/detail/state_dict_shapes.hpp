#pragma once
// Reading hyper-parameters off a state_dict's shapes (the *Options::from_state_dict helpers).
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"

namespace cvattn::detail {

// The shape of dict[key], which must exist and match pattern (kAny matches any size).
// ValueError "<where>: missing 'key' (keys: ...)" or "<where>: 'key' expected [..], got [..]".
inline const Shape& require_shape(const StateDict& dict, const std::string& key,
                                  const Shape& pattern, const char* where) {
  const StateDict::Entry* e = dict.find(key);
  if (e == nullptr) {
    std::string keys;
    for (const auto& k : dict.keys()) keys += (keys.empty() ? "'" : ", '") + k + "'";
    throw ValueError(
        detail::concat(where, ": missing '", key, "' (keys: ", keys.empty() ? "none" : keys, ")"));
  }
  const Shape& s = e->value.shape();
  bool ok = s.size() == pattern.size();
  for (std::size_t i = 0; ok && i < s.size(); ++i) ok = pattern[i] == kAny || pattern[i] == s[i];
  CVATTN_CHECK(ok, ValueError, where, ": '", key, "' expected ", to_string(pattern), ", got ",
               to_string(s));
  return s;
}

// A 1x1 reducing conv's weight [R, C, 1, 1] with R, C >= 1 (the gate MLPs and non-local
// projections whose widths a state_dict determines).
inline const Shape& require_conv1x1(const StateDict& dict, const std::string& key,
                                    const char* where) {
  const Shape& s = require_shape(dict, key, {kAny, kAny, 1, 1}, where);
  CVATTN_CHECK(s[0] >= 1 && s[1] >= 1, ValueError, where, ": '", key,
               "' expected [R, C, 1, 1] with R, C >= 1, got ", to_string(s));
  return s;
}

}  // namespace cvattn::detail
