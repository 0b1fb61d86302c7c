#pragma once
// Private: attention maps gathered from children under their module path.
#include <string>

#include "cvattn/core/attention_maps.hpp"

namespace cvattn::models::detail {

// Adds every map of `from` to `to` as "<prefix>.<name>".
inline void add_prefixed(AttentionMaps& to, const std::string& prefix, const AttentionMaps& from) {
  for (const auto& [name, map] : from.items()) to.add(prefix + "." + name, map);
}

}  // namespace cvattn::models::detail
