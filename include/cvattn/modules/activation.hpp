#pragma once
// Parameter-free activation modules (no state_dict keys), for use in Sequential.
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT ReLU final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "ReLU()"; }
};

class CVATTN_EXPORT Sigmoid final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Sigmoid()"; }
};

class CVATTN_EXPORT Tanh final : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Tanh()"; }
};

}  // namespace cvattn
