#include "cvattn/core/attention_maps.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {

void AttentionMaps::add(const std::string& name, Tensor map) {
  for (auto& item : items_) {
    if (item.first == name) {
      item.second = std::move(map);
      return;
    }
  }
  items_.emplace_back(name, std::move(map));
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
  throw ValueError(detail::concat("AttentionMaps: no map named '", name, "' (present: ",
                                  present.empty() ? "none" : present, ")"));
}

}  // namespace cvattn
