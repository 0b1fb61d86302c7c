#include "cvattn/core/state_dict.hpp"

#include <algorithm>

#include "cvattn/core/error.hpp"

namespace cvattn {

void StateDict::set(const std::string& key, Tensor value, bool integer) {
  for (auto& e : entries_) {
    if (e.key == key) {
      e.value = std::move(value);
      e.integer = integer;
      return;
    }
  }
  entries_.push_back({key, std::move(value), integer});
}

const StateDict::Entry* StateDict::find(const std::string& key) const {
  for (const auto& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

bool StateDict::contains(const std::string& key) const { return find(key) != nullptr; }

const Tensor& StateDict::at(const std::string& key) const {
  if (const Entry* e = find(key)) return e->value;
  std::string present;
  for (const auto& e : entries_) present += (present.empty() ? "" : ", ") + e.key;
  throw ValueError(detail::concat("StateDict: missing key '", key, "' (present: ",
                                  present.empty() ? "none" : present, ")"));
}

bool StateDict::erase(const std::string& key) {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const Entry& e) { return e.key == key; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.key);
  return out;
}

StateDict StateDict::sub(const std::string& prefix) const {
  StateDict out;
  const std::string p = prefix + ".";
  for (const auto& e : entries_) {
    if (e.key.compare(0, p.size(), p) == 0) out.set(e.key.substr(p.size()), e.value, e.integer);
  }
  return out;
}

bool StateDict::has_prefix(const std::string& prefix) const {
  const std::string p = prefix + ".";
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.key.compare(0, p.size(), p) == 0; });
}

}  // namespace cvattn
