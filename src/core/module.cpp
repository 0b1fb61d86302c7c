#include "cvattn/core/module.hpp"

#include <algorithm>

#include "cvattn/core/error.hpp"

namespace cvattn {

Module::~Module() = default;

Tensor Module::register_parameter(const std::string& name, const Shape& shape) {
  slots_.push_back({name, Tensor::zeros(shape), false, false});
  return slots_.back().value;
}

Tensor Module::register_buffer(const std::string& name, const Shape& shape, bool integer) {
  slots_.push_back({name, Tensor::zeros(shape), true, integer});
  return slots_.back().value;
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, const Slot*>>& out) const {
  for (const auto& s : slots_) out.emplace_back(prefix + s.name, &s);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

void Module::notify_loaded() {
  for (auto& child : children_) child.second->notify_loaded();
  on_weights_loaded();
}

void Module::load_state_dict(const StateDict& dict, Strict strict) {
  std::vector<std::pair<std::string, const Slot*>> slots;
  collect("", slots);
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [key, slot] : slots) {
    const StateDict::Entry* e = dict.find(key);
    if (e == nullptr) {
      if (!slot->integer) missing.push_back("'" + key + "'");
      continue;
    }
    if (slot->integer) continue;  // num_batches_tracked: accepted, ignored
    if (e->integer) {
      mismatched.push_back("'" + key + "' expected a floating-point tensor, got an integer one");
    } else if (e->value.shape() != slot->value.shape()) {
      mismatched.push_back("'" + key + "' expected " + to_string(slot->value.shape()) + ", got " +
                           to_string(e->value.shape()));
    }
  }
  for (const auto& e : dict.entries()) {
    const bool known = std::any_of(slots.begin(), slots.end(),
                                   [&](const auto& s) { return s.first == e.key; });
    if (!known) unexpected.push_back("'" + e.key + "'");
  }
  std::string message;
  auto add = [&](const char* what, const std::vector<std::string>& items) {
    if (items.empty()) return;
    std::string list;
    for (const auto& i : items) list += (list.empty() ? "" : ", ") + i;
    message += (message.empty() ? "" : "; ") + std::string(what) + list;
  };
  if (strict == Strict::yes) {
    add("missing ", missing);
    add("unexpected ", unexpected);
  }
  add("", mismatched);
  CVATTN_CHECK(message.empty(), ValueError, "load_state_dict(", describe(), "): ", message);
  for (const auto& [key, slot] : slots) {
    const StateDict::Entry* e = dict.find(key);
    if (e != nullptr && !slot->integer) {
      Tensor dst = slot->value;  // shares storage with the module's handle
      dst.copy_from(e->value);
    }
  }
  notify_loaded();
}

StateDict Module::state_dict() const {
  std::vector<std::pair<std::string, const Slot*>> slots;
  collect("", slots);
  StateDict out;
  for (const auto& [key, slot] : slots) out.set(key, slot->value, slot->integer);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, const Slot*>> slots;
  collect("", slots);
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [key, slot] : slots) {
    if (!slot->buffer) out.emplace_back(key, slot->value);
  }
  return out;
}

void Module::print(std::string& out, const std::string& name, int depth) const {
  out += std::string(static_cast<std::size_t>(depth) * 2, ' ');
  if (!name.empty()) out += "(" + name + "): ";
  out += describe() + "\n";
  for (const auto& [child_name, child] : children_) child->print(out, child_name, depth + 1);
}

std::string Module::pretty_print() const {
  std::string out;
  print(out, "", 0);
  return out;
}

}  // namespace cvattn
