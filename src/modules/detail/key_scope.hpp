#pragma once
// from_state_dict(dict, prefix, ...): the modules that read fixed key names ("fc1.weight") read
// them from the keys under `prefix` instead. A ValueError or ShapeError then says which prefix
// it looked under.
#include <string>
#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/core/state_dict.hpp"
#include "modules/repr.hpp"

namespace cvattn::detail {

// make(sub) where sub holds the keys of dict under prefix (given with or without the trailing
// dot), the prefix removed.
template <class Make>
auto with_key_scope(const StateDict& dict, const std::string& prefix, Make&& make) {
  const std::string p = key_prefix(prefix);
  try {
    return std::forward<Make>(make)(dict.sub(p.substr(0, p.size() - 1)));
  } catch (const ShapeError& e) {
    throw ShapeError(e.module_path(), e.message() + " (keys under '" + p + "')");
  } catch (const ValueError& e) {
    throw ValueError(e.module_path(), e.message() + " (keys under '" + p + "')");
  }
}

}  // namespace cvattn::detail
