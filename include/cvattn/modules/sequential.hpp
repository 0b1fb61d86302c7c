#pragma once
// Sequential: torch.nn.Sequential of UnaryModules. Children are named "0", "1", ... in order,
// so a child's keys are prefixed like PyTorch's ("0.weight", "1.running_mean"); modules without
// parameters still take an index.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT Sequential final : public UnaryModule {
 public:
  Sequential() = default;
  // ValueError on a null module.
  Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules);

  // Appends `module` as child "<size()>" and returns it with its own type. ValueError if null.
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<UnaryModule, M>, "Sequential holds UnaryModules");
    append(module);
    return module;
  }

  [[nodiscard]] std::size_t size() const noexcept { return layers_.size(); }
  [[nodiscard]] bool empty() const noexcept { return layers_.empty(); }
  // The i-th module; ValueError when i >= size().
  [[nodiscard]] const std::shared_ptr<UnaryModule>& at(std::size_t i) const;

  // Each module's forward applied in order; the input itself when empty.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Sequential"; }

 private:
  void append(std::shared_ptr<UnaryModule> module);

  std::vector<std::shared_ptr<UnaryModule>> layers_;
};

}  // namespace cvattn
