#pragma once
// Small helpers shared by the timm gate modules (EffectiveSqueezeExcitation ... CondConv2d):
// reading a state_dict under a prefix and running an optional inference BatchNorm child.
#include <memory>
#include <string>
#include <utility>

#include "cvattn/core/module.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/modules/batch_norm2d.hpp"

namespace cvattn::detail {

// A parameter-free parent whose only job is to name children ("channel" holding "fc1", "fc2"),
// so that their state_dict keys come out dotted as timm's.
class ModuleGroup final : public Module {
 public:
  explicit ModuleGroup(std::string name) : name_(std::move(name)) {}
  template <class M>
  std::shared_ptr<M> add(const std::string& key, std::shared_ptr<M> m) {
    return register_module(key, std::move(m));
  }
  [[nodiscard]] std::string describe() const override { return name_; }

 private:
  std::string name_;
};

// The keys of dict under prefix ("" or "layer1.0.se", with or without the trailing dot),
// with the prefix removed.
inline StateDict scoped(const StateDict& dict, const std::string& prefix) {
  if (prefix.empty()) return dict;
  std::string p = prefix;
  if (p.back() == '.') p.pop_back();
  return dict.sub(p);
}

// bn(x) in inference mode when bn is set, else x (timm's Identity); x [N, C, ...].
inline Tensor maybe_batch_norm(const std::shared_ptr<BatchNorm2d>& bn, const Tensor& x) {
  if (!bn) return x;
  return functional::batch_norm(x, bn->running_mean(), bn->running_var(), bn->weight(), bn->bias(),
                                bn->options().eps());
}

}  // namespace cvattn::detail
