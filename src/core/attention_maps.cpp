#include "cvattn/core/attention_maps.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {

void AttentionMaps::add(const std::string& name, Tensor map) {
  CVATTN_CHECK(!contains(name), ValueError, "AttentionMaps::add: a map named '", name,
               "' is already present");
  items_.emplace_back(name, std::move(map));
}

void AttentionMaps::merge(const std::string& prefix, const AttentionMaps& child) {
  for (const auto& [name, map] : child.items_)
    add(prefix.empty() ? name : prefix + "." + name, map);
}

bool AttentionMaps::contains(const std::string& name) const {
  for (const auto& item : items_) {
    if (item.first == name) return true;
  }
  return false;
}

const Tensor& AttentionMaps::at(const std::string& name) const {
  std::string present;
  for (const auto& item : items_) {
    if (item.first == name) return item.second;
    present += (present.empty() ? "" : ", ") + item.first;
  }
  throw ValueError(detail::concat("AttentionMaps: no map named '", name,
                                  "' (present: ", present.empty() ? "none" : present, ")"));
}

}  // namespace cvattn
