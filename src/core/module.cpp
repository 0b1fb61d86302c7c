#include "cvattn/core/module.hpp"

#include <algorithm>
#include <unordered_set>

#include "cvattn/core/error.hpp"

namespace cvattn {

Module::~Module() = default;

void Module::add_slot(Slot slot) {
  CVATTN_CHECK(!slot.name.empty(), ValueError, "register_", slot.buffer ? "buffer" : "parameter",
               ": the name is empty");
  for (const auto& s : slots_) {
    CVATTN_CHECK(s.name != slot.name, ValueError, "register_", slot.buffer ? "buffer" : "parameter",
                 ": '", slot.name, "' is already registered");
  }
  slots_.push_back(std::move(slot));
}

Tensor Module::register_parameter(const std::string& name, const Shape& shape) {
  add_slot({name, Tensor::zeros(shape), false, false});
  return slots_.back().value;
}

Tensor Module::register_parameter(const std::string& name, const Tensor& value) {
  CVATTN_CHECK(value.defined(), ValueError, "register_parameter: '", name, "' is undefined");
  add_slot({name, value, false, false});
  return slots_.back().value;
}

Tensor Module::register_buffer(const std::string& name, const Shape& shape, bool integer) {
  add_slot({name, Tensor::zeros(shape), true, integer});
  return slots_.back().value;
}

Tensor Module::register_buffer(const std::string& name, const Tensor& value) {
  CVATTN_CHECK(value.defined(), ValueError, "register_buffer: '", name, "' is undefined");
  add_slot({name, value, true, false});
  return slots_.back().value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  CVATTN_CHECK(module != nullptr, ValueError, "register_module: module '", name, "' is null");
  CVATTN_CHECK(!name.empty(), ValueError, "register_module: the name is empty");
  CVATTN_CHECK(name.find('.') == std::string::npos, ValueError, "register_module: name '", name,
               "' must not contain '.'");
  for (const auto& c : children_) {
    CVATTN_CHECK(c.first != name, ValueError, "register_module: '", name,
                 "' is already registered");
  }
  children_.emplace_back(name, std::move(module));
}

void Module::register_inline_module(std::shared_ptr<Module> module) {
  CVATTN_CHECK(module != nullptr, ValueError, "register_inline_module: module is null");
  children_.emplace_back(std::string(), std::move(module));
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, const Slot*>>& out) const {
  for (const auto& s : slots_) out.emplace_back(prefix + s.name, &s);
  for (const auto& [name, child] : children_) {
    child->collect(name.empty() ? prefix : prefix + name + ".", out);
  }
}

void Module::notify_loaded() {
  for (auto& child : children_) child.second->notify_loaded();
  on_weights_loaded();
}

IncompatibleKeys Module::load_state_dict(const StateDict& dict, Strict strict) {
  std::vector<std::pair<std::string, const Slot*>> slots;
  collect("", slots);
  std::vector<std::string> missing, unexpected, mismatched;
  IncompatibleKeys result;
  for (const auto& [key, slot] : slots) {
    const StateDict::Entry* e = dict.find(key);
    if (e == nullptr) {
      if (!slot->integer) {
        missing.push_back("'" + key + "'");
        result.missing_keys.push_back(key);
      }
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
  std::unordered_set<std::string> known;
  known.reserve(slots.size());
  for (const auto& s : slots) known.insert(s.first);
  for (const auto& e : dict.entries()) {
    if (known.count(e.key) == 0) {
      unexpected.push_back("'" + e.key + "'");
      result.unexpected_keys.push_back(e.key);
    }
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
  if (strict == Strict::yes) return {};
  return result;
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

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, const Slot*>> slots;
  collect("", slots);
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [key, slot] : slots) {
    if (slot->buffer) out.emplace_back(key, slot->value);
  }
  return out;
}

void Module::collect_modules(const std::string& path,
                             std::vector<std::pair<std::string, const Module*>>& out) const {
  out.emplace_back(path, this);
  for (const auto& [name, child] : children_) {
    if (name.empty()) continue;  // inline children are part of this module
    child->collect_modules(path.empty() ? name : path + "." + name, out);
  }
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  collect_modules("", out);
  return out;
}

const Module& Module::find(const std::string& path) const {
  const Module* m = this;
  std::string walked;
  std::size_t begin = 0;
  while (!path.empty()) {
    const std::size_t dot = path.find('.', begin);
    const std::string segment =
        path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    const Module* next = nullptr;
    std::string present;
    for (const auto& [name, child] : m->children_) {
      if (name.empty()) continue;  // inline children have no path of their own
      if (name == segment) next = child.get();
      present += (present.empty() ? "" : ", ") + name;
    }
    CVATTN_CHECK(next != nullptr, ValueError, "Module::find('", path,
                 "'): ", walked.empty() ? std::string("the module") : "'" + walked + "'",
                 " has no child '", segment, "' (children: ", present.empty() ? "none" : present,
                 ")");
    m = next;
    walked += (walked.empty() ? "" : ".") + segment;
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return *m;
}

Module& Module::find(const std::string& path) {
  return const_cast<Module&>(static_cast<const Module&>(*this).find(path));
}

void Module::register_forward_hook(const std::string& path, ForwardHook hook) {
  CVATTN_CHECK(hook != nullptr, ValueError, "register_forward_hook('", path, "'): empty hook");
  Module& target = find(path);
  CVATTN_CHECK(dynamic_cast<UnaryModule*>(&target) != nullptr, ValueError,
               "register_forward_hook('", path, "'): ", target.describe(),
               " is not a UnaryModule; hooks fire where a container or call_child runs a "
               "UnaryModule");
  target.hooks_.emplace_back(path, std::move(hook));
}

void Module::clear_forward_hooks() {
  hooks_.clear();
  for (auto& child : children_) child.second->clear_forward_hooks();
}

void Module::run_forward_hooks(const Tensor& input, const Tensor& output) const {
  for (const auto& [path, hook] : hooks_) hook(path, input, output);
}

Attended UnaryModule::forward_with_maps(const Tensor& x) const { return {forward(x), {}}; }

Tensor UnaryModule::operator()(const Tensor& x) const {
  Tensor y = forward(x);
  run_forward_hooks(x, y);
  return y;
}

Attended UnaryModule::call_with_maps(const Tensor& x) const {
  Attended r = forward_with_maps(x);
  run_forward_hooks(x, r.output);
  return r;
}

namespace detail {
void rethrow_with_path(const std::string& name) {
  auto join = [&](const Error& e) {
    return e.module_path().empty() ? name : name + "." + e.module_path();
  };
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(join(e), e.message());
  } catch (const ValueError& e) {
    throw ValueError(join(e), e.message());
  } catch (const IoError& e) {
    throw IoError(join(e), e.message());
  } catch (const Error& e) {
    throw Error(join(e), e.message());
  }
}
}  // namespace detail

Tensor call_child(const std::string& name, const UnaryModule& child, const Tensor& x,
                  AttentionMaps* maps) {
  Attended r;
  try {
    if (maps == nullptr) return child(x);
    r = child.call_with_maps(x);
  } catch (const Error&) {
    detail::rethrow_with_path(name);
  }
  maps->merge(name, r.maps);  // outside the try: a clash is the caller's, not the child's
  return r.output;
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
