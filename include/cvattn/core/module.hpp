#pragma once
// Module: the base of every parameter-owning layer, like torch.nn.Module.
//
// A module owns named parameters and buffers (Tensor handles) and named child modules, so its
// state_dict keys are the dotted PyTorch names ("paths.0.conv.weight"). load_state_dict copies
// values into the existing storage, then calls on_weights_loaded() (the one place to pre-pack or
// fold). After loading, forward is const and touches no mutable state: one instance may be
// shared by any number of threads.
//
// Your own network is a Module subclass that registers its children in its constructor under
// the names its PyTorch twin gives them (docs/porting.md):
//
//   class BasicBlock : public cvattn::UnaryModule {
//    public:
//     BasicBlock(...) {
//       conv1_ = register_module("conv1", std::make_shared<Conv2d>(...));   // "conv1.weight"
//       se_ = register_module("se", std::make_shared<SqueezeExcitation>(...));
//     }
//     Tensor forward(const Tensor& x) const override { return run(x, nullptr); }
//     Attended forward_with_maps(const Tensor& x) const override {
//       Attended r;
//       r.output = run(x, &r.maps);
//       return r;
//     }
//    private:
//     Tensor run(const Tensor& x, AttentionMaps* maps) const {
//       Tensor y = call_child("conv1", *conv1_, x, maps);   // hooks, maps "se.attention", paths
//       return call_child("se", *se_, y, maps);
//     }
//   };
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

enum class Strict { no, yes };

// What load_state_dict(dict, Strict::no) did not match, as PyTorch's IncompatibleKeys: keys the
// module has that dict lacks, and keys of dict the module does not have, in their orders.
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  [[nodiscard]] bool empty() const noexcept {
    return missing_keys.empty() && unexpected_keys.empty();
  }
};

// Called with the hook's path (as registered), the module's input and its output.
using ForwardHook =
    std::function<void(const std::string& path, const Tensor& input, const Tensor& output)>;

class UnaryModule;

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
  // Strict::no shape mismatches are still errors (as in PyTorch) and the missing and unexpected
  // keys are returned (with Strict::yes the result is always empty). Nothing is copied when it
  // throws. Integer tensors are accepted only where the module has an integer buffer
  // (num_batches_tracked), and ignored; a missing integer buffer is not reported.
  IncompatibleKeys load_state_dict(const StateDict& dict, Strict strict = Strict::yes);
  // Parameters and buffers under their dotted names (sharing storage with the module).
  [[nodiscard]] StateDict state_dict() const;
  [[nodiscard]] std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  [[nodiscard]] std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  // This module (path "") and every descendant, depth first in registration order, under
  // their dotted paths ("layer1", "layer1.0", "layer1.0.conv1", ...).
  [[nodiscard]] std::vector<std::pair<std::string, const Module*>> named_modules() const;
  [[nodiscard]] const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children()
      const noexcept {
    return children_;
  }
  // The descendant at a dotted path ("layer1.0.se"; "" is this module). ValueError naming the
  // segment not found and the children present there.
  [[nodiscard]] const Module& find(const std::string& path) const;
  [[nodiscard]] Module& find(const std::string& path);

  // Registration, public as in LibTorch: call it from your own module's constructor, in the
  // order of the PyTorch module's __init__, so that state_dict() lists keys in PyTorch's order.
  //
  // A zero-initialised parameter; returns a handle sharing its storage. The name may be dotted
  // ("fc1.weight": a key of a child the module does not model as a Module). ValueError on an
  // empty or already registered name.
  Tensor register_parameter(const std::string& name, const Shape& shape);
  // A parameter holding `value` (shared, not copied: loading writes into its storage).
  Tensor register_parameter(const std::string& name, const Tensor& value);
  // A buffer (running statistics). An integer buffer (num_batches_tracked) is optional in
  // state_dicts and its value is ignored.
  Tensor register_buffer(const std::string& name, const Shape& shape, bool integer = false);
  Tensor register_buffer(const std::string& name, const Tensor& value);
  // A child: its keys get the prefix "name." Returns the module with its own type. ValueError
  // on a null module, an empty name, a name with '.', or a name already registered.
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module takes a Module");
    add_child(name, module);
    return module;
  }

  // Forward hooks: `hook` is called with (path, input, output) each time the module at the
  // dotted `path` below this one ("" = this module) is run by a container or call_child (not
  // when someone calls its forward() directly, as built-in modules do with their internals).
  // The hook is stored on that module, so it fires wherever the module is used. The module must
  // be a UnaryModule (ValueError otherwise, or for an unknown path). Register hooks before use
  // and not while a forward runs: forward stays const and reads them without locking; a hook
  // called from several threads at once must be thread-safe itself.
  void register_forward_hook(const std::string& path, ForwardHook hook);
  // Removes the hooks of this module and of every descendant.
  void clear_forward_hooks();

 protected:
  // A child that adds no name segment: its keys appear as this module's own ("in_proj_weight"
  // rather than "mha.in_proj_weight"), for adapters such as MultiheadSelfAttention.
  void register_inline_module(std::shared_ptr<Module> module);
  // Called after load_state_dict copied the values, children first.
  virtual void on_weights_loaded() {}
  // Calls this module's hooks (UnaryModule's call paths do).
  void run_forward_hooks(const Tensor& input, const Tensor& output) const;

 private:
  struct Slot {
    std::string name;
    Tensor value;
    bool buffer = false;
    bool integer = false;
  };
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void add_slot(Slot slot);
  void collect(const std::string& prefix,
               std::vector<std::pair<std::string, const Slot*>>& out) const;
  void collect_modules(const std::string& path,
                       std::vector<std::pair<std::string, const Module*>>& out) const;
  void notify_loaded();
  void print(std::string& out, const std::string& name, int depth) const;

  std::vector<Slot> slots_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, ForwardHook>> hooks_;
};

// A module with one input and one output; what Sequential chains.
class CVATTN_EXPORT UnaryModule : public Module {
 public:
  [[nodiscard]] virtual Tensor forward(const Tensor& x) const = 0;
  // The output and every attention map this module and its descendants compute, descendants'
  // maps under their dotted paths ("layer1.0.se.attention"). Modules that compute maps override
  // it; the default is forward(x) with no maps.
  [[nodiscard]] virtual Attended forward_with_maps(const Tensor& x) const;
  // forward(x), then this module's forward hooks.
  [[nodiscard]] Tensor operator()(const Tensor& x) const;
  // forward_with_maps(x), then this module's forward hooks (with the output).
  [[nodiscard]] Attended call_with_maps(const Tensor& x) const;
};

namespace detail {
// From inside a catch block: rethrows the cvattn::Error being handled as the same type
// (ShapeError, ValueError, IoError, else Error) with `name` prefixed to its module path.
[[noreturn]] CVATTN_EXPORT void rethrow_with_path(const std::string& name);
}  // namespace detail

// How a parent runs a child: child(x) (forward and the child's hooks) or, when maps is not null,
// child.call_with_maps(x), whose maps are added to *maps as "<name>.<map>" (ValueError if one is
// already there). A cvattn::Error from the child comes out as the same type with `name` prefixed
// to its module path, so an error deep inside reads "stem.0.conv: Conv2d::forward: ...". `name`
// is the child's path below the caller, dotted when the child sits in a ModuleList or
// ModuleDict of the caller ("blocks.3").
CVATTN_EXPORT Tensor call_child(const std::string& name, const UnaryModule& child, const Tensor& x,
                                AttentionMaps* maps = nullptr);

// Runs f() and returns its result, rethrowing a cvattn::Error with `name` prefixed to its module
// path: for calling a child that is not a UnaryModule (MultiheadAttention's forward(q, k, v)).
template <class F>
decltype(auto) with_module_path(const std::string& name, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const Error&) {
    detail::rethrow_with_path(name);
  }
}

}  // namespace cvattn
