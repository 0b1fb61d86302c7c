#pragma once
// torch.nn.Dropout and timm's DropPath (stochastic depth). cvattn runs inference only, where
// both are the identity: forward returns its input. The probability is kept for describe().
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT Dropout final : public UnaryModule {
 public:
  // ValueError unless 0 <= p <= 1, as PyTorch.
  explicit Dropout(double p = 0.5);
  // Inference: x itself.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "Dropout(p=0.5, inplace=False)"
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] double p() const noexcept { return p_; }

 private:
  double p_;
};

class CVATTN_EXPORT DropPath final : public UnaryModule {
 public:
  // ValueError unless 0 <= drop_prob <= 1.
  explicit DropPath(double drop_prob = 0.0);
  // Inference: x itself.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "DropPath(drop_prob=0.100)", as timm prints it.
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] double drop_prob() const noexcept { return drop_prob_; }

 private:
  double drop_prob_;
};

}  // namespace cvattn
