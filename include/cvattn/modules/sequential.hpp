#pragma once
// Sequential: torch.nn.Sequential of UnaryModules. Children are named "0", "1", ... in order, or
// by the names given (torch.nn.Sequential(OrderedDict(...))), so a child's keys are prefixed like
// PyTorch's ("0.weight", "conv.weight", "bn.running_mean"); modules without parameters still take
// a name.
//
//   auto stem = std::make_shared<Sequential>();                  // "0.weight", "1.weight", ...
//   stem->push_back(std::make_shared<Conv2d>(...));
//   Sequential block{{"conv", conv}, {"bn", bn}, {"act", act}};  // "conv.weight", "bn.bias", ...
//
// forward runs each child through call_child (its hooks run; an error names the child:
// "1: BatchNorm2d::forward: ..."); forward_with_maps gathers every child's maps under its name
// ("2.attention", "layer1.0.se.attention" when Sequentials nest).
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT Sequential final : public UnaryModule {
 public:
  using Named = std::pair<std::string, std::shared_ptr<UnaryModule>>;

  Sequential() = default;
  // ValueError on a null module.
  Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules);
  // Named children, in order; ValueError on a null module or a repeated, empty or dotted name.
  Sequential(std::initializer_list<Named> modules);

  // Appends `module` as child "<size()>" and returns it with its own type. ValueError if null.
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<UnaryModule, M>, "Sequential holds UnaryModules");
    append(std::to_string(layers_.size()), module);
    return module;
  }
  // Appends `module` as child `name`; ValueError as for the named constructor.
  template <class M>
  std::shared_ptr<M> push_back(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<UnaryModule, M>, "Sequential holds UnaryModules");
    append(name, module);
    return module;
  }

  [[nodiscard]] std::size_t size() const noexcept { return layers_.size(); }
  [[nodiscard]] bool empty() const noexcept { return layers_.empty(); }
  // The i-th module; ValueError when i >= size().
  [[nodiscard]] const std::shared_ptr<UnaryModule>& at(std::size_t i) const;
  // The module named `name`; ValueError listing the names when absent.
  [[nodiscard]] const std::shared_ptr<UnaryModule>& at(const std::string& name) const;
  // The i-th module's name; ValueError when i >= size().
  [[nodiscard]] const std::string& name(std::size_t i) const;

  // Each module applied in order (through call_child); the input itself when empty.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus every child's maps under "<child name>.<map>".
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Sequential"; }

 private:
  void append(const std::string& name, std::shared_ptr<UnaryModule> module);
  [[nodiscard]] Tensor run(const Tensor& x, AttentionMaps* maps) const;

  std::vector<Named> layers_;
};

}  // namespace cvattn
