#pragma once
// Module: the base of every parameter-owning layer, like torch.nn.Module.
//
// A module owns named parameters and buffers (Tensor handles) and named child modules, so its
// state_dict keys are the dotted PyTorch names ("paths.0.conv.weight"). load_state_dict copies
// values into the existing storage, then calls on_weights_loaded() (the one place to pre-pack or
// fold). After loading, forward is const and touches no mutable state: one instance may be
// shared by any number of threads.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

enum class Strict { no, yes };

class CVATTN_EXPORT Module {
 public:
  Module() = default;
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  // "Conv2d(in_channels=3, out_channels=8, kernel_size=(3, 3))"; the default is the type name.
  [[nodiscard]] virtual std::string describe() const = 0;
  // describe() of this module and, indented, of every child.
  [[nodiscard]] std::string pretty_print() const;

  // Copies every tensor of dict into this module's parameters and buffers. With Strict::yes,
  // every missing key, unexpected key and shape mismatch is reported in one ValueError; with
  // Strict::no only shape mismatches are errors. Integer tensors are accepted only where the
  // module has an integer buffer (num_batches_tracked), and ignored.
  void load_state_dict(const StateDict& dict, Strict strict = Strict::yes);
  // Parameters and buffers under their dotted names (sharing storage with the module).
  [[nodiscard]] StateDict state_dict() const;
  [[nodiscard]] std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  [[nodiscard]] const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children()
      const noexcept {
    return children_;
  }

 protected:
  // Registers a zero-initialised parameter and returns a handle sharing its storage.
  Tensor register_parameter(const std::string& name, const Shape& shape);
  // A buffer (running statistics). An integer buffer (num_batches_tracked) is optional in
  // state_dicts and its value is ignored.
  Tensor register_buffer(const std::string& name, const Shape& shape, bool integer = false);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }
  // Called after load_state_dict copied the values, children first.
  virtual void on_weights_loaded() {}

 private:
  struct Slot {
    std::string name;
    Tensor value;
    bool buffer = false;
    bool integer = false;
  };
  void collect(const std::string& prefix, std::vector<std::pair<std::string, const Slot*>>& out)
      const;
  void notify_loaded();
  void print(std::string& out, const std::string& name, int depth) const;

  std::vector<Slot> slots_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// A module with one input and one output; what Sequential chains.
class CVATTN_EXPORT UnaryModule : public Module {
 public:
  [[nodiscard]] virtual Tensor forward(const Tensor& x) const = 0;
};

}  // namespace cvattn
