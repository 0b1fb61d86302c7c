#pragma once
// ModuleList and ModuleDict: torch.nn.ModuleList / torch.nn.ModuleDict. They hold children
// under PyTorch's names ("0", "1", ... for a list; the keys, in insertion order, for a dict), so
// a network's state_dict keys come out as PyTorch's ("blocks.3.attn.in_proj_weight",
// "heads.cls.weight"). Like PyTorch's, they have no forward: the module that owns one runs its
// entries with call_child, giving the dotted path, which names the entry in errors, hooks and maps:
//
//   for (std::size_t i = 0; i < blocks_->size(); ++i)
//     y = call_child("blocks." + std::to_string(i), blocks_->unary(i), y, maps);
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT ModuleList final : public Module {
 public:
  ModuleList() = default;
  // ValueError on a null module.
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);

  // Appends `module` as child "<size()>" and returns it with its own type. ValueError if null.
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    append(module);
    return module;
  }

  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
  // ValueError when i >= size().
  [[nodiscard]] const std::shared_ptr<Module>& at(std::size_t i) const;
  // The i-th module as a UnaryModule, for call_child; ValueError when it is not one.
  [[nodiscard]] const UnaryModule& unary(std::size_t i) const;
  [[nodiscard]] std::vector<std::shared_ptr<Module>>::const_iterator begin() const noexcept {
    return items_.begin();
  }
  [[nodiscard]] std::vector<std::shared_ptr<Module>>::const_iterator end() const noexcept {
    return items_.end();
  }

  [[nodiscard]] std::string describe() const override { return "ModuleList"; }

 private:
  void append(std::shared_ptr<Module> module);

  std::vector<std::shared_ptr<Module>> items_;
};

class CVATTN_EXPORT ModuleDict final : public Module {
 public:
  using Named = std::pair<std::string, std::shared_ptr<Module>>;

  ModuleDict() = default;
  // In order; ValueError on a null module or a repeated, empty or dotted key.
  ModuleDict(std::initializer_list<Named> modules);

  // Adds `module` under `key` (after the others) and returns it with its own type; ValueError
  // as for the constructor (a key cannot be replaced: the module owning the dict holds it).
  template <class M>
  std::shared_ptr<M> insert(const std::string& key, std::shared_ptr<M> module) {
    append(key, module);
    return module;
  }

  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
  [[nodiscard]] bool contains(const std::string& key) const;
  // ValueError listing the keys when absent.
  [[nodiscard]] const std::shared_ptr<Module>& at(const std::string& key) const;
  // The module under key as a UnaryModule, for call_child; ValueError when it is not one.
  [[nodiscard]] const UnaryModule& unary(const std::string& key) const;
  // The keys in insertion order.
  [[nodiscard]] std::vector<std::string> keys() const;
  [[nodiscard]] const std::vector<Named>& items() const noexcept { return items_; }

  [[nodiscard]] std::string describe() const override { return "ModuleDict"; }

 private:
  void append(const std::string& key, std::shared_ptr<Module> module);

  std::vector<Named> items_;
};

}  // namespace cvattn
