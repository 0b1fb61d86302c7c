#include "cvattn/modules/containers.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {
namespace {

const UnaryModule& as_unary(const Module& m, const char* where, const std::string& which) {
  const auto* u = dynamic_cast<const UnaryModule*>(&m);
  CVATTN_CHECK(u != nullptr, ValueError, where, ": module ", which, " (", m.describe(),
               ") is not a UnaryModule");
  return *u;
}

}  // namespace

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) append(m);
}

void ModuleList::append(std::shared_ptr<Module> module) {
  CVATTN_CHECK(module != nullptr, ValueError, "ModuleList: module ", items_.size(), " is null");
  register_module(std::to_string(items_.size()), module);
  items_.push_back(std::move(module));
}

const std::shared_ptr<Module>& ModuleList::at(std::size_t i) const {
  CVATTN_CHECK(i < items_.size(), ValueError, "ModuleList::at: index ", i, " out of range for ",
               items_.size(), " modules");
  return items_[i];
}

const UnaryModule& ModuleList::unary(std::size_t i) const {
  return as_unary(*at(i), "ModuleList::unary", std::to_string(i));
}

ModuleDict::ModuleDict(std::initializer_list<Named> modules) {
  for (const auto& [key, m] : modules) append(key, m);
}

void ModuleDict::append(const std::string& key, std::shared_ptr<Module> module) {
  CVATTN_CHECK(module != nullptr, ValueError, "ModuleDict: module '", key, "' is null");
  register_module(key, module);
  items_.emplace_back(key, std::move(module));
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& item : items_) {
    if (item.first == key) return true;
  }
  return false;
}

const std::shared_ptr<Module>& ModuleDict::at(const std::string& key) const {
  for (const auto& item : items_) {
    if (item.first == key) return item.second;
  }
  const std::vector<std::string> k = keys();
  std::string list;
  for (const auto& s : k) list += (list.empty() ? "" : ", ") + s;
  throw ValueError(detail::concat("ModuleDict::at: no module under '", key,
                                  "' (keys: ", list.empty() ? "none" : list, ")"));
}

const UnaryModule& ModuleDict::unary(const std::string& key) const {
  return as_unary(*at(key), "ModuleDict::unary", "'" + key + "'");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& item : items_) out.push_back(item.first);
  return out;
}

}  // namespace cvattn
