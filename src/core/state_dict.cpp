#include "cvattn/core/state_dict.hpp"

#include <algorithm>
#include <regex>
#include <unordered_map>

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
  throw ValueError(detail::concat("StateDict: missing key '", key,
                                  "' (present: ", present.empty() ? "none" : present, ")"));
}

bool StateDict::erase(const std::string& key) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
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

struct KeyRenames::Rule {
  enum class Kind { prefix, regex, drop } kind;
  std::string from;  // the prefix, or the pattern as written (for messages)
  std::string to;
  std::regex pattern;
};

KeyRenames& KeyRenames::prefix(const std::string& from, const std::string& to) {
  CVATTN_CHECK(!from.empty(), ValueError, "KeyRenames::prefix: the prefix to replace is empty");
  rules_.push_back(std::make_shared<const Rule>(Rule{Rule::Kind::prefix, from, to, {}}));
  return *this;
}

namespace {
std::regex compile(const std::string& pattern, const char* where) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ValueError(detail::concat(where, ": bad pattern '", pattern, "' (", e.what(), ")"));
  }
}
}  // namespace

KeyRenames& KeyRenames::regex(const std::string& pattern, const std::string& replacement) {
  rules_.push_back(std::make_shared<const Rule>(
      Rule{Rule::Kind::regex, pattern, replacement, compile(pattern, "KeyRenames::regex")}));
  return *this;
}

KeyRenames& KeyRenames::drop(const std::string& pattern) {
  rules_.push_back(std::make_shared<const Rule>(
      Rule{Rule::Kind::drop, pattern, {}, compile(pattern, "KeyRenames::drop")}));
  return *this;
}

std::optional<std::string> KeyRenames::apply(const std::string& key) const {
  std::string k = key;
  for (const auto& r : rules_) {
    switch (r->kind) {
      case Rule::Kind::prefix:
        if (k.compare(0, r->from.size(), r->from) == 0) k = r->to + k.substr(r->from.size());
        break;
      case Rule::Kind::regex:
        if (std::regex_search(k, r->pattern)) k = std::regex_replace(k, r->pattern, r->to);
        break;
      case Rule::Kind::drop:
        if (std::regex_search(k, r->pattern)) return std::nullopt;
        break;
    }
  }
  return k;
}

StateDict rename_keys(const StateDict& dict, const KeyRenames& rules) {
  StateDict out;
  std::unordered_map<std::string, std::string> origin;  // new key -> original key
  for (const auto& e : dict.entries()) {
    const std::optional<std::string> renamed = rules.apply(e.key);
    if (!renamed) continue;  // dropped
    const std::string& k = *renamed;
    CVATTN_CHECK(!k.empty(), ValueError, "rename_keys: '", e.key, "' becomes an empty key");
    const auto [it, inserted] = origin.emplace(k, e.key);
    CVATTN_CHECK(inserted, ValueError, "rename_keys: '", it->second, "' and '", e.key,
                 "' both become '", k, "'");
    out.set(k, e.value, e.integer);
  }
  return out;
}

}  // namespace cvattn
