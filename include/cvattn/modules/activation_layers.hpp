#pragma once
// Parameter-free modules of issue 18 (no state_dict keys), for Sequential and for modules
// whose act_layer is a setting: torch.nn.GELU, SiLU, Hardswish, Hardsigmoid, Mish, ReLU6,
// Identity, and Activation, which applies any timm act_layer by name.
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/activation.hpp"

namespace cvattn {

class CVATTN_EXPORT GELU final : public UnaryModule {
 public:
  explicit GELU(GeluApproximate approximate = GeluApproximate::none)
      : approximate_(approximate) {}
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "GELU(approximate='none')"
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] GeluApproximate approximate() const noexcept { return approximate_; }

 private:
  GeluApproximate approximate_;
};

class CVATTN_EXPORT SiLU final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "SiLU()"; }
};

class CVATTN_EXPORT Hardswish final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Hardswish()"; }
};

class CVATTN_EXPORT Hardsigmoid final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Hardsigmoid()"; }
};

class CVATTN_EXPORT Mish final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Mish()"; }
};

class CVATTN_EXPORT ReLU6 final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "ReLU6()"; }
};

// torch.nn.Identity: returns its input (the same tensor, sharing storage).
class CVATTN_EXPORT Identity final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Identity()"; }
};

// The activation timm's create_act_layer(name) builds; describe() prints the PyTorch module
// it stands for ("SiLU()", "GELU(approximate='tanh')", "Identity()").
class CVATTN_EXPORT Activation final : public UnaryModule {
 public:
  explicit Activation(ActLayer act) : act_(act) {}
  explicit Activation(const std::string& act_layer) : act_(parse_act_layer(act_layer)) {}
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] ActLayer act_layer() const noexcept { return act_; }

 private:
  ActLayer act_;
};

}  // namespace cvattn
